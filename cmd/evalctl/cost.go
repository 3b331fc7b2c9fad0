package main

import (
	"fmt"

	"github.com/evalbridge/evalbridge/internal/judge"
)

// judgeSpend is what an evaluator's judge calls cost in a run
// (docs/contract.md §21, docs/cost.md): from the tokens each reply reported
// in `usage` (estimated for replies without it, counted apart).
type judgeSpend struct {
	Judge string `json:"judge"`
	// Calls counts the judge's replies; CallsEstimated those without usage.
	Calls          int64 `json:"calls"`
	CallsEstimated int64 `json:"calls_estimated"`
	InputTokens    int64 `json:"input_tokens"`
	OutputTokens   int64 `json:"output_tokens"`
	// Cost is the judge's price applied to the tokens; null without a price.
	Cost          *float64 `json:"cost"`
	CostEstimated *float64 `json:"cost_estimated"`
	Currency      string   `json:"currency,omitempty"`
}

// setSpend attaches each evaluator's judge spend to its row.
func (s *summary) setSpend(spend []judge.Spend) {
	for _, sp := range spend {
		e := s.byName[sp.Evaluator]
		if e == nil {
			continue
		}
		js := &judgeSpend{Judge: sp.Judge, Calls: sp.Calls, CallsEstimated: sp.Estimated,
			InputTokens: sp.InputTokens, OutputTokens: sp.OutputTokens}
		if sp.Priced {
			c, ce := sp.Cost, sp.EstimatedCost
			js.Cost, js.CostEstimated, js.Currency = &c, &ce, sp.Currency
		}
		e.Judge = js
	}
}

// hasJudges says some row has a judge: the text summary then shows the
// JUDGE CALLS and COST columns.
func (s *summary) hasJudges() bool {
	for _, e := range s.byName {
		if e.judge != "" {
			return true
		}
	}
	return false
}

// costText is the COST column: the cost with its currency, "-" without a
// price, and a note when part of it is estimated.
func costText(js *judgeSpend) string {
	switch {
	case js == nil:
		return "0"
	case js.Cost == nil:
		return "- (no price)"
	case js.CallsEstimated > 0:
		return fmt.Sprintf("%.6f %s (%.6f estimated)", *js.Cost, js.Currency, *js.CostEstimated)
	}
	return fmt.Sprintf("%.6f %s", *js.Cost, js.Currency)
}
