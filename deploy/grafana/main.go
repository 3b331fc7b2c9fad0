// Command grafana writes evalbridge's Grafana dashboard (built from code in
// ./dashboard with Grafana's foundation SDK) to dashboard.json:
//
//	go run ./deploy/grafana            # from the repository root
//	go run ./deploy/grafana -o FILE
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/evalbridge/evalbridge/deploy/grafana/dashboard"
)

//go:generate go run . -o dashboard.json

func main() {
	out := flag.String("o", "deploy/grafana/dashboard.json", "file to write")
	flag.Parse()
	b, err := dashboard.JSON()
	if err != nil {
		fmt.Fprintln(os.Stderr, "grafana:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "grafana:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s (%d panels)\n", *out, len(dashboard.Panels()))
}
