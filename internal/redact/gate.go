package redact

// A gate says, from one pass over a text's bytes, whether a built-in
// detector can find anything in it: most texts (reasons, short fields)
// hold nothing most detectors look for, and are then not read once per
// detector. The stats go by value: a pointer handed to a function value
// escapes, and each text redacted would allocate them.
type gate func(st textStats) bool

// textStats is what the pass tells the gates.
type textStats struct {
	at, iban, secret, ipv4, ipv6 bool
	// the most digits in one run of bytes a phone number (card number)
	// is written with
	phoneDigits, cardDigits int
}

var (
	gateEmail  gate = func(st textStats) bool { return st.at }
	gatePhone  gate = func(st textStats) bool { return st.phoneDigits >= 7 }
	gateCard   gate = func(st textStats) bool { return st.cardDigits >= 13 }
	gateIBAN   gate = func(st textStats) bool { return st.iban }
	gateIP     gate = func(st textStats) bool { return st.ipv4 || st.ipv6 }
	gateSecret gate = func(st textStats) bool { return st.secret }
)

// Byte classes of scan.
const (
	clDigit  = 1 << iota // 0-9
	clPhone              // in a phone number: digits and " +().-/"
	clCard               // in a card number: digits, " -"
	clV4                 // digits and '.'
	clV6                 // hex digits, ':' and '.'
	clLetter             // A-Z a-z
)

var byteClass = func() (cl [256]uint8) {
	for c := range 256 {
		b := byte(c)
		if isDigit(b) {
			cl[c] |= clDigit | clPhone | clCard | clV4
		}
		if isLetter(b) {
			cl[c] |= clLetter
		}
		if ipv6Set[c] {
			cl[c] |= clV6
		}
	}
	for _, c := range " +().-/" {
		cl[c] |= clPhone
	}
	for _, c := range " -" {
		cl[c] |= clCard
	}
	cl['.'] |= clV4
	return cl
}()

// secretSecond are the bytes that follow each first byte of a secret
// shape (Be, ey, sk, AK, gh, xo, --, …).
var secretSecond = func() (a [256][4]uint64) {
	for _, p := range []string{"Be", "BE", "be", "bE", "ey", "sk", "pk", "rk", "AK", "AS", "AI", "gh", "gi", "gl", "xo", "--"} {
		a[p[0]][p[1]>>6] |= 1 << (p[1] & 63)
	}
	return a
}()

func scan(text string) textStats {
	var st textStats
	var phone, card, v4d, v4dots, v6 int
	wordStart := true // the byte before is not a letter or digit
	for i := 0; i < len(text); i++ {
		c := text[i]
		cl := byteClass[c]
		if cl&clDigit != 0 {
			phone++
			card++
			v4d++
			st.phoneDigits = max(st.phoneDigits, phone)
			st.cardDigits = max(st.cardDigits, card)
			st.ipv4 = st.ipv4 || (v4dots >= 3 && v4d >= 4)
			wordStart = false
			continue
		}
		if cl&clPhone == 0 {
			phone = 0
		}
		if cl&clCard == 0 {
			card = 0
		}
		if cl&clV4 == 0 {
			v4d, v4dots = 0, 0
		} else if v4dots++; v4dots >= 3 && v4d >= 4 {
			st.ipv4 = true
		}
		if cl&clV6 == 0 {
			v6 = 0
		} else if c == ':' {
			if v6++; v6 >= 2 {
				st.ipv6 = true
			}
		}
		if c == '@' {
			st.at = true
		}
		if wordStart && i+1 < len(text) && (cl&clLetter != 0 || c == '-') {
			n := text[i+1]
			if secretSecond[c][n>>6]&(1<<(n&63)) != 0 {
				st.secret = true
			}
			if cl&clLetter != 0 && i+15 <= len(text) && isLetter(n) && isDigit(text[i+2]) && isDigit(text[i+3]) {
				st.iban = true
			}
		}
		wordStart = cl&clLetter == 0
	}
	return st
}
