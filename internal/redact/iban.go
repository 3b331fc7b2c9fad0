package redact

// ibanLengths are the IBAN lengths of the registry's countries.
var ibanLengths = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29,
	"BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29,
	"ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28,
	"HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20,
	"LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19,
	"MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29,
	"RO": 24, "RS": 22, "SA": 24, "SC": 31, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28,
	"TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}

// findIBANs finds IBANs: a country code and two check digits at the start
// of a word (after a space, punctuation or a label: `IBAN:DE89…`), then
// the country's number of letters and digits, compact or in groups (one
// space or dash between), with mod-97 checksum 1. Each start reads at
// most 34 characters and their separators.
func findIBANs(text, _ string, out []span) []span {
	for i := 0; i+15 <= len(text); i++ {
		if !isLetter(text[i]) || !isLetter(text[i+1]) || !isDigit(text[i+2]) || !isDigit(text[i+3]) || isAlnum(before(text, i)) {
			continue
		}
		if e, ok := ibanAt(text, i); ok {
			out = append(out, span{i, e})
			i = e - 1
		}
	}
	return out
}

func upper(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

// ibanAt reads the IBAN at text[i:]: its end, and whether it is one.
func ibanAt(text string, i int) (int, bool) {
	cc := [2]byte{upper(text[i]), upper(text[i+1])}
	want, ok := ibanLengths[string(cc[:])]
	if !ok {
		return 0, false
	}
	var compact [34]byte
	n, j := 0, i
	var sep byte
	for j < len(text) && n < want {
		c := text[j]
		if (c == ' ' || c == '-') && n > 0 && j+1 < len(text) && isAlnum(text[j+1]) && isAlnum(text[j-1]) && (sep == 0 || sep == c) {
			sep = c
			j++
			continue
		}
		if !isAlnum(c) {
			break
		}
		compact[n] = upper(c)
		n++
		j++
	}
	if n != want || isAlnum(after(text, j)) {
		return 0, false
	}
	// Move the first four characters to the end, letters as 10..35.
	rem := 0
	for k := range want {
		c := compact[(k+4)%want]
		if isDigit(c) {
			rem = (rem*10 + int(c-'0')) % 97
		} else {
			rem = (rem*100 + int(c-'A'+10)) % 97
		}
	}
	return j, rem == 1
}
