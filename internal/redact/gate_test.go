package redact

import (
	"bufio"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A detector's gate may say "nothing here" only where its windows find
// nothing: checked on the corpora (whole lines, and every cut of them) and
// on random texts made of the bytes the detectors look for.
func TestGatesNeverHideAWindow(t *testing.T) {
	var texts []string
	for _, path := range []string{"testdata/corpus.txt", "testdata/corpus_holdout.txt"} {
		f, err := os.Open(path)
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			text, _ := parseCorpusLine(t, sc.Text())
			texts = append(texts, text)
			for i := 1; i < len(text); i += 7 {
				texts = append(texts, text[i:], text[:i])
			}
		}
		require.NoError(t, sc.Err())
		require.NoError(t, f.Close())
	}
	rng := rand.New(rand.NewSource(1))
	const alphabet = "0123456789 -.()+:@abcdefxyzABEGIKSXZ_/#" + "\xe2\x80\xa6"
	pieces := append([]string{CutMarker, "Bearer ", "eyJ", "sk-", "-----BEGIN", "AKIA", "ghp_", "xox", "GB82"}, secretMarkers...)
	for range 20000 {
		var b strings.Builder
		for n := rng.Intn(40); n > 0; n-- {
			if rng.Intn(8) == 0 {
				b.WriteString(pieces[rng.Intn(len(pieces))])
				continue
			}
			b.WriteByte(alphabet[rng.Intn(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	gated := 0
	for _, name := range Builtins() {
		d := builtin(name)
		for _, text := range texts {
			st := scan(text)
			if d.gate.open(&st) {
				continue
			}
			gated++
			require.Empty(t, d.windows(text), "%s gated out %q", name, text)
		}
	}
	require.Greater(t, gated, len(texts), "the gates skip detectors on most texts")
	for _, text := range texts {
		require.Equal(t, strings.Contains(text, CutMarker), scan(text).cut, "%q", text)
	}
}

// BenchmarkReason is redacting a typical reason with every built-in: no
// value in it, numbers among the words.
func BenchmarkReason(b *testing.B) {
	r, err := New(NewDefaultConfig(), nil)
	require.NoError(b, err)
	reasons := []string{
		"4 of 4 calls in expected order (LCS / longer length)",
		"3 of 4 tool calls succeeded; failed: call #4 book_hotel: span status ERROR",
		"within the limits: total tokens 3060 <= 100000",
		"the answer cites the order ORD-2024-001234 placed on 2026-06-12 at 10:45",
	}
	for i, s := range reasons {
		b.Run(strconv.Itoa(i), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r.Text(s) != s {
					b.Fatal("changed")
				}
			}
		})
	}
}
