package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/evalbridge/evalbridge/internal/dataset"
	"github.com/evalbridge/evalbridge/internal/testkit"
)

// startReview runs `evalctl review DIR` on a free loopback port until the
// test ends, and returns its base URL once it answers.
func startReview(t *testing.T, dir string) string {
	t.Helper()
	addr := testkit.FreeAddr(t)
	return startReviewOn(t, dir, addr, addr)
}

// startReviewOn runs `evalctl review DIR --listen listen` and returns the
// base URL on addr (a loopback address that reaches it).
func startReviewOn(t *testing.T, dir, listen, addr string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb testkit.LockedBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"review", dir, "--listen", listen}, nil, &out, &errb) }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("evalctl review exited %d: %s", code, errb.String())
		}
	})
	base := "http://" + addr
	client := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(20 * time.Second); ; {
		resp, err := client.Get(base + "/")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				client.CloseIdleConnections()
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("evalctl review did not answer on %s: %v\n%s", addr, err, errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The review page serves only the dataset, only for the host it listens
// on, and takes writes only with its page's token: a form posted from
// another site (no token) or a request under another Host (DNS
// rebinding) changes nothing.
func TestReviewRefusesWhatIsNotItsOwn(t *testing.T) {
	dir, cfg, prod := datasetSetup(t)
	ds := filepath.Join(dir, "ds")
	_, got := addJSON(t, ds, "--config", cfg, prod)
	base := startReview(t, ds)
	before := snapshot(t, ds)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer client.CloseIdleConnections()
	form := url.Values{"case": {got.AddedIDs[0]}, "label": {"pass"}, "name": {"no_tool_errors"}}
	for name, want := range map[string]int{"/label": http.StatusForbidden, "/pin": http.StatusForbidden} {
		resp, err := client.PostForm(base+name, form)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("POST %s without the token: %d, want %d", name, resp.StatusCode, want)
		}
	}
	for _, path := range []string{"/dataset.json", "/cases/" + got.AddedIDs[0] + ".json", "/../evals.yaml"} {
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
	req.Host = "attacker.example"
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("Host attacker.example: %d, want 421", resp.StatusCode)
	}
	if !equalMaps(before, snapshot(t, ds)) {
		t.Error("a refused request changed the dataset")
	}
}

// Listening on every interface (--listen 0.0.0.0:PORT) is for reviewers on
// other machines: a request addressed to any IP of the machine is
// answered (an IP literal cannot be a rebound DNS name), one addressed to
// another host name still is not.
func TestReviewOnAllInterfacesAnswersItsAddresses(t *testing.T) {
	dir, cfg, prod := datasetSetup(t)
	ds := filepath.Join(dir, "ds")
	addJSON(t, ds, "--config", cfg, prod)
	addr := testkit.FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	base := startReviewOn(t, ds, "0.0.0.0:"+port, addr)
	client := &http.Client{}
	defer client.CloseIdleConnections()
	for host, want := range map[string]int{
		"192.0.2.7:" + port: http.StatusOK, "[2001:db8::7]:" + port: http.StatusOK, "localhost:" + port: http.StatusOK,
		"attacker.example:" + port: http.StatusMisdirectedRequest, "192.0.2.7:1": http.StatusMisdirectedRequest,
	} {
		req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
		req.Host = host
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
}

// A reviewer in headless Chromium labels a case fail with a critique and
// pins another's expected calls by editing the observed ones (reorder,
// fix an argument, add a call and remove it again); the files written are
// the label line `evalctl calibrate --labels` reads and the pin `evalctl
// run --dataset` gates on. Screenshots of each step go to
// $EVALCTL_REVIEW_SCREENSHOTS when set (for a person to look at).
func TestReviewLabelsAndPinsInChromium(t *testing.T) {
	bin := chromium(t)
	dir, cfg, prod := datasetSetup(t)
	ds := filepath.Join(dir, "ds")
	_, got := addJSON(t, ds, "--config", cfg, prod)
	refund, wrong := got.AddedIDs[0], got.AddedIDs[1]
	base := startReview(t, ds)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.WindowSize(1400, 1100), chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	ctx, cancel := context.WithTimeout(bctx, 2*time.Minute)
	defer cancel()
	shots := os.Getenv("EVALCTL_REVIEW_SCREENSHOTS")
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			png, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil || shots == "" {
				return chromedp.Void{}, err
			}
			return chromedp.Void{}, os.WriteFile(filepath.Join(shots, name), png, 0o644)
		}
	}
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	critique := "The lookup timed out and the agent gave up; it should retry once."
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/?case="+refund),
		chromedp.WaitVisible(css("#label-fail")),
		shot("review-1-case.png"),
		chromedp.SendKeys(css("#critique"), critique),
		chromedp.Click(css("#label-fail")),
		chromedp.WaitVisible(css("#done")),
		shot("review-2-labelled.png"),
	)
	if err != nil {
		t.Fatalf("labelling in Chromium: %v", err)
	}
	if shown, err := chromedp.Run(ctx, chromedp.Text(css("#labels"))); err != nil || !strings.Contains(shown, "no_tool_errors: fail") {
		t.Errorf("the page does not show the label: %q, %v", shown, err)
	}
	labels := readJSONL(t, filepath.Join(ds, dataset.LabelsFile))
	if len(labels) != 1 {
		t.Fatalf("labels.jsonl holds %d lines, want 1", len(labels))
	}
	l := labels[0]
	if l["trace_id"] != "da7a0000000000000000000000000001" || l["span_id"] != "0100000000000001" || l["name"] != "no_tool_errors" ||
		l["label"] != "fail" || l["critique"] != critique || l["type"] != "human" || l["case_id"] != refund {
		t.Errorf("label line %v", l)
	}

	// The wrong-order case called refund before lookup_order: move the
	// first call down, fix refund's arguments, add a call and remove it.
	row := func(n int, sel string) chromedp.CSS {
		return css("#calls .call:nth-child(" + string(rune('0'+n)) + ") " + sel)
	}
	err = chromedp.Do(ctx,
		chromedp.Navigate(base+"/?case="+wrong),
		chromedp.WaitVisible(css("#pin")),
		chromedp.Click(row(1, ".down")),
		chromedp.Click(row(2, ".call-args")),
		chromedp.KeyEvent("a", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.SendKeys(row(2, ".call-args"), `{"order": 9, "amount": "full"}`),
		chromedp.Click(css("#add-call")),
		chromedp.SendKeys(row(3, ".call-name"), "notify_customer"),
		shot("review-3-editing.png"),
		chromedp.Click(row(3, ".remove")),
		chromedp.Click(css("#pin")),
		chromedp.WaitVisible(css("#done")),
		shot("review-4-pinned.png"),
	)
	if err != nil {
		t.Fatalf("pinning in Chromium: %v", err)
	}
	pinned, err := chromedp.Run(ctx, chromedp.Text(css("#expected")))
	if err != nil {
		t.Fatal(err)
	}
	c, raw := readCaseFile(t, ds, wrong)
	want := `[{"arguments":{"order":9},"name":"lookup_order"},{"arguments":{"amount":"full","order":9},"name":"refund"}]`
	if c.Expected == nil || string(c.Expected.ToolCalls) != want {
		t.Fatalf("case file after the pin:\n%s\nwant tool_calls %s", raw, want)
	}
	if !strings.Contains(pinned, `"amount": "full"`) {
		t.Errorf("the page does not show the pin: %q", pinned)
	}
	// The refund case was labelled, not pinned.
	if c, _ := readCaseFile(t, ds, refund); c.Expected != nil {
		t.Errorf("the labelled case got pinned: %s", c.Expected.ToolCalls)
	}
	if err := chromedp.Cancel(bctx); err != nil {
		t.Errorf("closing Chromium: %v", err)
	}
}

func readJSONL(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v: %s", path, err, sc.Text())
		}
		out = append(out, m)
	}
	return out
}

// The labels the page writes are what `evalctl calibrate --labels` reads
// (§25): labelled through the page's own form (with its token), they pair
// with the machine results of re-scoring the production traces.
func TestReviewLabelsFeedCalibrate(t *testing.T) {
	dir, cfg, prod := datasetSetup(t)
	ds := filepath.Join(dir, "ds")
	_, got := addJSON(t, ds, "--config", cfg, prod)
	base := startReview(t, ds)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer client.CloseIdleConnections()
	resp, err := client.Get(base + "/?case=" + got.AddedIDs[0])
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	m := regexp.MustCompile(`name="token" value="([0-9a-f]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("no token in the page:\n%s", page)
	}
	for i, id := range got.AddedIDs {
		// People agree with the machine on the refund (fail) and not on
		// the wrong order (refund_flow failed; they say pass).
		label, name := "fail", "refund_flow"
		if i == 1 {
			label = "pass"
		}
		resp, err := client.PostForm(base+"/label", url.Values{"token": {string(m[1])}, "case": {id}, "name": {name}, "label": {label}, "critique": {"checked by hand"}})
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("POST /label: %d", resp.StatusCode)
		}
	}
	_, out, stderr := runEvalctl(t, "", "calibrate", "--config", cfg, "--labels", filepath.Join(ds, dataset.LabelsFile), "--summary", "json", prod)
	var cal struct {
		Labels     int `json:"labels"`
		Evaluators []struct {
			Name      string                    `json:"name"`
			Pairs     int                       `json:"pairs"`
			Confusion map[string]map[string]int `json:"confusion"`
		} `json:"evaluators"`
	}
	if err := json.Unmarshal([]byte(out), &cal); err != nil {
		t.Fatalf("calibrate --summary json: %v\n%s\n%s", err, out, stderr)
	}
	found := false
	for _, e := range cal.Evaluators {
		if e.Name == "refund_flow" {
			found = true
			if e.Pairs != 2 || e.Confusion["fail"]["fail"] != 1 || e.Confusion["fail"]["pass"] != 1 {
				t.Errorf("refund_flow: %d pairs, confusion %v; want 2 pairs, machine fail / human fail 1 and human pass 1", e.Pairs, e.Confusion)
			}
		}
	}
	if cal.Labels != 2 || !found {
		t.Errorf("calibrate read %d labels (want 2), refund_flow found %v:\n%s", cal.Labels, found, out)
	}
}
