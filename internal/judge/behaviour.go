package judge

// Behaviour is what of a judge's config changes its verdicts, the part an
// evaluator's version hashes (docs/contract.md §24): the model and how it is
// asked. Endpoints, keys, headers, timeouts, concurrency, rates, budgets,
// prices, the cache and retries change where and how often it is asked,
// not what it answers, and are left out.
type Behaviour struct {
	Model         string  `json:"model"`
	Temperature   float64 `json:"temperature"`
	MaxTokens     int     `json:"max_tokens"`
	JSONResponse  bool    `json:"json_response"`
	MaxFieldBytes int     `json:"max_field_bytes"`
}

// Behaviour is the config's Behaviour after defaults, so a config that
// leaves max_field_bytes out and one that writes its default agree.
func (c Config) Behaviour() Behaviour {
	n := c.normalized()
	return Behaviour{Model: n.Model, Temperature: n.Temperature, MaxTokens: n.MaxTokens,
		JSONResponse: n.JSONResponse, MaxFieldBytes: n.MaxFieldBytes}
}
