package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestEvaluate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(evaluate))
	defer srv.Close()
	for body, want := range map[string]string{
		`{"evaluator": "x", "case": {"tool_calls": [{"name": "a"}, {"name": "b", "errored": true}]}}`: `{"reason":"1 of 2 tool calls failed b","score":0.5}`,
		`{"evaluator": "x", "case": {"tool_calls": []}}`:                                              `{"skipped":"no tool calls"}`,
	} {
		resp, err := http.Post(srv.URL, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		b, _ := json.Marshal(got)
		if string(b) != want {
			t.Errorf("%s: got %s, want %s", body, b, want)
		}
	}
}
