package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/evalbridge/evalbridge/internal/dataset"
	"github.com/evalbridge/evalbridge/internal/textutil"
)

// `evalctl review DIR` (docs/contract.md §27): a local page on which a
// reviewer reads each case (its input, what the agent did, the machine's
// results), labels it pass or fail with a critique (DIR/labels.jsonl, the
// JSONL `evalctl calibrate --labels` reads, §25) and pins the expected
// tool calls by editing the observed ones (the case file, as `dataset pin`
// writes it). One review feeds both the judge's calibration and the CI
// gate. Server-rendered; the only script is the call editor's. It listens
// on loopback unless told otherwise, answers only for the host it listens
// on (no DNS rebinding), takes writes only with the token of the page it
// served (no cross-site form posts), and serves nothing but the dataset.

//go:embed review.html.tmpl
var reviewTemplate string

var reviewTmpl = template.Must(template.New("review").Funcs(template.FuncMap{
	"pretty": prettyJSON,
	"argsJSON": func(m map[string]any) string {
		b, _ := json.MarshalIndent(m, "", "  ")
		return string(b)
	},
	"score": func(p *float64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%.3g", *p)
	},
}).Parse(reviewTemplate))

const reviewUsage = "evalctl review DIR [--listen 127.0.0.1:8899] [--name NAME]"

func reviewCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("evalctl review", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8899", "the `ADDRESS` to serve the page on (loopback by default: the page writes the dataset)")
	name := fs.String("name", "", "the evaluation `NAME` a label is for by default (default: the first that failed at capture)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "evalctl review: usage: "+reviewUsage)
		return exitUsage
	}
	if _, err := dataset.Open(pos[0], false); err != nil {
		fmt.Fprintf(stderr, "evalctl review: %v\n", err)
		return exitUsage
	}
	host, _, err := net.SplitHostPort(*listen)
	if err != nil {
		fmt.Fprintf(stderr, "evalctl review: --listen %s: %v\n", *listen, err)
		return exitUsage
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "evalctl review: %v\n", err)
		return exitUsage
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		fmt.Fprintf(stderr, "evalctl review: warning: listening on %s, not loopback: anyone who reaches it can label and pin\n", ln.Addr())
	}
	rv, err := newReviewer(pos[0], *name, ln.Addr().String())
	if err != nil {
		_ = ln.Close()
		fmt.Fprintf(stderr, "evalctl review: %v\n", err)
		return exitUsage
	}
	srv := &http.Server{Handler: rv, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "reviewing %s on http://%s/ (Ctrl-C to stop)\n", pos[0], ln.Addr())
	select {
	case err = <-served:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = srv.Shutdown(sctx)
		cancel()
		<-served
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "evalctl review: %v\n", err)
		return exitUsage
	}
	return exitOK
}

// reviewer serves one dataset. Every request reads the dataset afresh (a
// `dataset pin` or `add` in another terminal shows at once); writes are
// serialised.
type reviewer struct {
	dir         string
	defaultName string
	hosts       []string // the Host headers answered, besides IP literals
	port        string   // the port an IP literal Host must name
	token       string
	mu          sync.Mutex
}

func newReviewer(dir, defaultName, addr string) (*reviewer, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	hosts := []string{addr, "localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port}
	return &reviewer{dir: dir, defaultName: defaultName, hosts: hosts, port: port, token: hex.EncodeToString(b)}, nil
}

// answers says whether the page answers a request with this Host header:
// the address it listens on, localhost, or any IP literal with its port
// (listening on every interface, it is reached by the machine's address;
// an IP literal cannot be a DNS name rebound to this machine).
func (rv *reviewer) answers(host string) bool {
	if slices.Contains(rv.hosts, host) {
		return true
	}
	h, port, err := net.SplitHostPort(host)
	return err == nil && port == rv.port && net.ParseIP(h) != nil
}

func (rv *reviewer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; form-action 'self'; img-src data:")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if !rv.answers(r.Host) {
		http.Error(w, "evalctl review answers only for "+rv.hosts[0], http.StatusMisdirectedRequest)
		return
	}
	switch {
	case r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		rv.page(w, r)
	case (r.URL.Path == "/label" || r.URL.Path == "/pin") && r.Method == http.MethodPost:
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.PostFormValue("token")), []byte(rv.token)) != 1 {
			http.Error(w, "this form did not come from the page evalctl review served (reload it)", http.StatusForbidden)
			return
		}
		rv.mu.Lock()
		defer rv.mu.Unlock()
		if r.URL.Path == "/label" {
			rv.label(w, r)
		} else {
			rv.pin(w, r)
		}
	case r.URL.Path == "/" || r.URL.Path == "/label" || r.URL.Path == "/pin":
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	default:
		http.NotFound(w, r)
	}
}

// reviewLabel is a line of DIR/labels.jsonl: what `evalctl calibrate
// --labels` reads ({"trace_id", "span_id", "name", "label"}, §25), with
// the critique, type human (gen_ai.evaluation.evaluator.type), the case
// and when.
type reviewLabel struct {
	TraceID  string `json:"trace_id"`
	SpanID   string `json:"span_id,omitempty"`
	Name     string `json:"name"`
	Label    string `json:"label"`
	Critique string `json:"critique"`
	Type     string `json:"type"`
	CaseID   string `json:"case_id"`
	Time     string `json:"time"`
}

func (rv *reviewer) label(w http.ResponseWriter, r *http.Request) {
	_, c, ok := rv.caseOf(w, r.PostFormValue("case"))
	if !ok {
		return
	}
	label, name := r.PostFormValue("label"), strings.TrimSpace(r.PostFormValue("name"))
	if label != "pass" && label != "fail" {
		http.Error(w, fmt.Sprintf("label %q: want pass or fail", label), http.StatusBadRequest)
		return
	}
	if name == "" {
		http.Error(w, "a label needs the evaluation name it labels", http.StatusBadRequest)
		return
	}
	l := reviewLabel{TraceID: c.Source.TraceID, SpanID: c.Source.SpanID, Name: name, Label: label,
		Critique: strings.TrimSpace(r.PostFormValue("critique")), Type: "human", CaseID: c.ID,
		Time: time.Now().UTC().Format(time.RFC3339)}
	line, _ := json.Marshal(l)
	f, err := os.OpenFile(filepath.Join(rv.dir, dataset.LabelsFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		_, err = f.Write(append(line, '\n'))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		http.Error(w, "writing labels: "+err.Error(), http.StatusInternalServerError)
		return
	}
	rv.back(w, r, c.ID, "labelled")
}

func (rv *reviewer) pin(w http.ResponseWriter, r *http.Request) {
	ds, c, ok := rv.caseOf(w, r.PostFormValue("case"))
	if !ok {
		return
	}
	exp, err := dataset.ParseExpected([]byte(r.PostFormValue("tool_calls")), nil)
	if err != nil {
		http.Error(w, fmt.Sprintf("case %s: %v (nothing was pinned)", c.ID, err), http.StatusBadRequest)
		return
	}
	if err := pinCase(ds, c, exp); err != nil {
		http.Error(w, "writing the case: "+err.Error(), http.StatusInternalServerError)
		return
	}
	rv.back(w, r, c.ID, "pinned")
}

// back redirects to the case's page (post, redirect, get: a reload does
// not post again), keeping the list's filter.
func (rv *reviewer) back(w http.ResponseWriter, r *http.Request, id, done string) {
	q := url.Values{"case": {id}, "done": {done}}
	if show := r.PostFormValue("show"); show != "" {
		q.Set("show", show)
	}
	http.Redirect(w, r, "/?"+q.Encode(), http.StatusSeeOther)
}

func (rv *reviewer) caseOf(w http.ResponseWriter, id string) (*dataset.Dataset, *dataset.Case, bool) {
	ds, err := dataset.Open(rv.dir, false)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return nil, nil, false
	}
	c := ds.Get(id)
	if c == nil {
		http.Error(w, fmt.Sprintf("no case %q", id), http.StatusNotFound)
		return nil, nil, false
	}
	return ds, c, true
}

type reviewListItem struct {
	ID, Failed, Prompt string
	Pinned, Labelled   bool
	Selected           bool
}

type reviewPage struct {
	Dir, Token, Show, Done string
	Total, Pinned, Labels  int
	List                   []reviewListItem
	Case                   *dataset.Case
	Names                  []string
	DefaultName            string
	CaseLabels             []reviewLabel
	EditCalls              []editCall
	EditJSON               string
	ExpectedJSON           string
}

// editCall is a row of the call editor.
type editCall struct {
	Name, Args string
}

func (rv *reviewer) page(w http.ResponseWriter, r *http.Request) {
	ds, err := dataset.Open(rv.dir, false)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	labels := rv.readLabels()
	labelled := map[string]bool{}
	for _, l := range labels {
		labelled[l.CaseID] = true
	}
	show := r.URL.Query().Get("show")
	p := reviewPage{Dir: rv.dir, Token: rv.token, Show: show, Done: r.URL.Query().Get("done"), Total: len(ds.Cases), Labels: len(labels)}
	want := r.URL.Query().Get("case")
	for _, c := range ds.Cases {
		if c.Pinned() {
			p.Pinned++
		}
		switch {
		case show == "unpinned" && c.Pinned(), show == "pinned" && !c.Pinned(), show == "unlabelled" && labelled[c.ID]:
			continue
		}
		item := reviewListItem{ID: c.ID, Failed: orNone(c.Failed()), Prompt: textutil.Ellipsis(c.Prompt(), 80), Pinned: c.Pinned(), Labelled: labelled[c.ID]}
		if p.Case == nil && (want == "" || want == c.ID) {
			p.Case, item.Selected = c, true
		}
		p.List = append(p.List, item)
	}
	if want != "" && p.Case == nil {
		if c := ds.Get(want); c != nil { // filtered out of the list, but asked for
			p.Case = c
		}
	}
	if c := p.Case; c != nil {
		for _, res := range c.Results {
			p.Names = append(p.Names, res.Name)
		}
		p.DefaultName = rv.defaultName
		if p.DefaultName == "" {
			if f := c.Failed(); len(f) > 0 {
				p.DefaultName = f[0]
			}
		}
		for _, l := range labels {
			if l.CaseID == c.ID {
				p.CaseLabels = append(p.CaseLabels, l)
			}
		}
		p.EditCalls, p.EditJSON = editorCalls(c)
		if c.Pinned() {
			b, _ := json.Marshal(c.Expected)
			p.ExpectedJSON = prettyJSON(string(b))
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var buf bytes.Buffer
	if err := reviewTmpl.Execute(&buf, p); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	_, _ = w.Write(buf.Bytes())
}

// editorCalls are the rows the call editor starts from: the pinned calls
// when the case has them as objects, else the observed ones.
func editorCalls(c *dataset.Case) ([]editCall, string) {
	var rows []editCall
	if c.Expected != nil && len(c.Expected.ToolCalls) > 0 {
		var items []any
		_ = json.Unmarshal(c.Expected.ToolCalls, &items)
		for _, it := range items {
			switch v := it.(type) {
			case string:
				rows = append(rows, editCall{Name: v})
			case map[string]any:
				name, _ := v["name"].(string)
				row := editCall{Name: name}
				if a, ok := v["arguments"]; ok {
					b, _ := json.MarshalIndent(a, "", "  ")
					row.Args = string(b)
				}
				rows = append(rows, row)
			}
		}
	} else {
		for _, tc := range c.Observed.ToolCalls {
			b, _ := json.MarshalIndent(tc.Arguments, "", "  ")
			rows = append(rows, editCall{Name: tc.Name, Args: string(b)})
		}
	}
	calls := []map[string]any{}
	for _, r := range rows {
		m := map[string]any{"name": r.Name}
		var a any
		if r.Args != "" && json.Unmarshal([]byte(r.Args), &a) == nil {
			m["arguments"] = a
		}
		calls = append(calls, m)
	}
	b, _ := json.MarshalIndent(calls, "", "  ")
	return rows, string(b)
}

func (rv *reviewer) readLabels() []reviewLabel {
	f, err := os.Open(filepath.Join(rv.dir, dataset.LabelsFile))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []reviewLabel
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 4<<20)
	for sc.Scan() {
		var l reviewLabel
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			out = append(out, l)
		}
	}
	return out
}

func prettyJSON(s string) string {
	var buf bytes.Buffer
	if json.Indent(&buf, []byte(s), "", "  ") != nil {
		return s
	}
	return buf.String()
}
