// Program fakejudge is a local, OpenAI-compatible stand-in LLM judge for the
// worked example of docs/agreement.md: fixed, readable verdicts on the
// travel agent's runs (internal/fakejudge says which), so the
// example needs no API key and gives the same figures everywhere.
//
//	go run ./examples/fakejudge              # http://localhost:8000/v1
//	go run ./examples/fakejudge -drift       # the same judge after a bad model update
package main

import (
	"errors"
	"flag"
	"log"
	"net/http"
	"time"

	"github.com/evalbridge/evalbridge/internal/fakejudge"
)

func main() {
	addr := flag.String("addr", "localhost:8000", "listen `address`; the judge's endpoint is http://ADDRESS/v1")
	drift := flag.Bool("drift", false, "judge as a drifted model would: pass answers that could not book, fail repeated searches")
	flag.Parse()
	what := "as shipped"
	if *drift {
		what = "drifted"
	}
	log.Printf("fakejudge (%s) on http://%s/v1", what, *addr)
	srv := &http.Server{Addr: *addr, Handler: fakejudge.Judge{Drift: *drift}, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("fakejudge: %v", err)
	}
}
