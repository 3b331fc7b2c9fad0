package redact

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

// FuzzRedact checks what redaction promises on any text (docs/contract.md
// §20): it never panics, it is idempotent (redacting again changes
// nothing), and a JSON document stays valid JSON with the same structure
// at every depth (strings that hold JSON hold JSON of the same shape
// after; a number may become a string placeholder, nothing else changes
// kind). Seeds: every line of the labelled corpora, the forms of
// forms_test.go and the adversarial units of the benchmarks.
//
//	go test ./internal/redact -run '^$' -fuzz FuzzRedact -fuzztime 5m
func FuzzRedact(f *testing.F) {
	for _, path := range []string{"testdata/corpus.txt", "testdata/corpus_holdout.txt", "testdata/corpus_heldout.txt"} {
		file, err := os.Open(path)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(file)
		for sc.Scan() {
			if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
				text, _ := parseCorpusLine(f, line)
				f.Add(text)
			}
		}
		_ = file.Close()
	}
	for _, in := range adversarial {
		f.Add(strings.Repeat(in.unit, 40))
	}
	f.Add(`{"a":"{\"email\":\"bob\\u0040example.com\",\"n\":4111111111111111}","tel":5551234567}`)
	f.Add(`["[REDACTED:email#1]",{"phone":[4155550123,"+44 20 7946 0958"]}]`)

	r := defaultRedactor(f)
	f.Fuzz(func(t *testing.T, in string) {
		once := r.Text(in)
		if twice := r.Text(once); twice != once {
			t.Fatalf("not idempotent:\nin:    %q\nonce:  %q\ntwice: %q", in, once, twice)
		}
		if err := sameShape(in, once, 0); err != nil {
			t.Fatalf("%v\nin:  %q\nout: %q", err, in, once)
		}
	})
}

// sameShape: when in is a JSON document (an object, an array or a
// string: a text that is a bare number is prose that reads as JSON), out is
// one of the same structure, and so are the strings in it that hold JSON
// documents.
func sameShape(in, out string, depth int) error {
	t := strings.TrimLeft(in, " \t\r\n")
	if depth > 8 || t == "" || strings.IndexByte(`{["`, t[0]) < 0 || !json.Valid([]byte(in)) {
		return nil
	}
	if !json.Valid([]byte(out)) {
		return errors.New("a JSON document is no longer valid JSON")
	}
	din, dout := json.NewDecoder(strings.NewReader(in)), json.NewDecoder(strings.NewReader(out))
	din.UseNumber()
	dout.UseNumber()
	for {
		a, errA := din.Token()
		b, errB := dout.Token()
		if errA == io.EOF && errB == io.EOF {
			return nil
		}
		if errA != nil || errB != nil {
			return errors.New("the documents end differently")
		}
		switch a := a.(type) {
		case json.Delim:
			if b != a {
				return errors.New("the structure changed")
			}
		case string:
			bs, ok := b.(string)
			if !ok {
				return errors.New("a string became something else")
			}
			if err := sameShape(a, bs, depth+1); err != nil {
				return errors.New("in a string: " + err.Error())
			}
		case json.Number:
			if _, ok := b.(json.Number); !ok {
				if _, ok := b.(string); !ok {
					return errors.New("a number became neither a number nor a string")
				}
			}
		default: // bool, nil
			if b != a {
				return errors.New("a literal changed")
			}
		}
	}
}
