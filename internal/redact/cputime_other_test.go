//go:build !unix

package redact

import "testing"

func reportCPU(b *testing.B, body func()) {
	for b.Loop() {
		body()
	}
}
