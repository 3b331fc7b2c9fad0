package redact

import (
	"bufio"
	"math/rand"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A detector's gate may say "nothing here" only where the detector finds
// nothing: checked on the corpora (whole lines, and pieces of them) and on
// random texts made of the bytes the detectors look for.
func TestGatesNeverHideAValue(t *testing.T) {
	var texts []string
	for _, path := range []string{"testdata/corpus.txt", "testdata/corpus_holdout.txt", "testdata/corpus_heldout.txt"} {
		f, err := os.Open(path)
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			text, _ := parseCorpusLine(t, sc.Text())
			text = newView(text).text
			texts = append(texts, text)
			for i := 1; i < len(text); i += 7 {
				texts = append(texts, text[i:], text[:i])
			}
		}
		require.NoError(t, sc.Err())
		require.NoError(t, f.Close())
	}
	rng := rand.New(rand.NewSource(1))
	const alphabet = "0123456789 -.()+:@/abcdefxyzABEGIKSXZ_#\"="
	pieces := []string{"Bearer ", "eyJhbGciOi.", "sk-", "-----BEGIN PRIVATE KEY-----", "AKIA", "ghp_", "xoxb-", "GB82", "DE89", "tel:", "4111", "::", "a@b.co"}
	for range 20000 {
		var b strings.Builder
		for n := rng.Intn(60); n > 0; n-- {
			if rng.Intn(6) == 0 {
				b.WriteString(pieces[rng.Intn(len(pieces))])
				continue
			}
			b.WriteByte(alphabet[rng.Intn(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	gated, found := 0, 0
	for _, name := range Builtins() {
		d := builtin(name)
		for _, text := range texts {
			st := scan(text)
			for _, label := range []string{"", "phone"} {
				got := d.find(text, label, nil)
				found += len(got)
				if d.gate(st) {
					continue
				}
				gated++
				require.Empty(t, got, "%s gated out %q", name, text)
			}
		}
	}
	require.Greater(t, gated, len(texts), "the gates skip detectors on most texts")
	require.Greater(t, found, 1000, "the texts hold values")
}
