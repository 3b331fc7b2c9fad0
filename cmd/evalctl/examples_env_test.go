package main

import (
	"context"
	"io"
	"os"
	"testing"
)

// TestJudgeExamplesTakeEndpointFromEnv loads the judge examples with evalctl's
// config loader: without the variables they name the documented defaults,
// with them the endpoint and model a user sets (an in-VPC model needs no
// edited file).
func TestJudgeExamplesTakeEndpointFromEnv(t *testing.T) {
	for _, tc := range []struct {
		path, judge, endpoint, model string
	}{
		{"../../examples/judge.yaml", "default", "https://api.openai.com/v1", "gpt-4o-mini"},
		{"../../examples/judge-ollama.yaml", "local", "http://localhost:11434/v1", "llama3.1:8b"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			for _, k := range []string{"EVALBRIDGE_JUDGE_ENDPOINT", "EVALBRIDGE_JUDGE_MODEL"} {
				t.Setenv(k, "") // restored after the test
				os.Unsetenv(k)
			}
			cfg, err := loadConfig(context.Background(), tc.path, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			j := cfg.Judges[tc.judge]
			if j.Endpoint != tc.endpoint || j.Model != tc.model {
				t.Errorf("defaults: endpoint %q model %q, want %q %q", j.Endpoint, j.Model, tc.endpoint, tc.model)
			}

			t.Setenv("EVALBRIDGE_JUDGE_ENDPOINT", "http://vllm.internal:8000/v1")
			t.Setenv("EVALBRIDGE_JUDGE_MODEL", "qwen2.5-72b-instruct")
			cfg, err = loadConfig(context.Background(), tc.path, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			j = cfg.Judges[tc.judge]
			if j.Endpoint != "http://vllm.internal:8000/v1" || j.Model != "qwen2.5-72b-instruct" {
				t.Errorf("from the environment: endpoint %q model %q", j.Endpoint, j.Model)
			}
		})
	}
}
