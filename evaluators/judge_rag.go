package evaluators

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/confmap"

	"github.com/evalbridge/evalbridge/adapter"
)

// Judge evaluators of answers and retrieval: faithfulness, hallucination,
// answer_relevancy, contextual_relevance, contextual_precision,
// contextual_recall.

// contextOption is the grounding context when the spans carry none.
type contextOption struct {
	Context []string `mapstructure:"context"`
}

type ragJudge struct {
	judgeBase
	context []string
	run     func(e *ragJudge, ctx context.Context, c *adapter.Case) Result
}

func (e *ragJudge) Evaluate(ctx context.Context, c *adapter.Case) Result { return e.run(e, ctx, c) }

func newRAG(run func(e *ragJudge, ctx context.Context, c *adapter.Case) Result) func(*confmap.Conf, Deps) (Evaluator, error) {
	return func(opts *confmap.Conf, deps Deps) (Evaluator, error) {
		var o contextOption
		if err := decodeOptions(opts, &o); err != nil {
			return nil, err
		}
		return &ragJudge{judgeBase: newJudgeBase(deps), context: o.Context, run: run}, nil
	}
}

const noContext = "no context to check against: set eval.context, record retrieved documents, or the evaluator's `context` option"

// claim is one claim of an output with the judge's verdict on it.
type claim struct {
	Claim   string `json:"claim"`
	Verdict label  `json:"verdict"`
}

// countClaims tallies verdicts; a verdict outside the known ones counts as
// the last (the unfavourable) one.
func countClaims(claims []claim, known ...string) (map[string]int, map[string][]string) {
	n := map[string]int{}
	ex := map[string][]string{}
	for _, cl := range claims {
		v := string(cl.Verdict)
		if !containsString(known, v) {
			v = known[len(known)-1]
		}
		n[v]++
		if len(ex[v]) < 2 {
			ex[v] = append(ex[v], clipText(cl.Claim, 120))
		}
	}
	return n, ex
}

func quoted(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// faithfulness: supported claims / claims, against the context.
func runFaithfulness(e *ragJudge, ctx context.Context, c *adapter.Case) Result {
	limit := e.limit()
	if strings.TrimSpace(c.Output) == "" {
		return Skipped("no output (the final assistant text) to check")
	}
	docs, from := groundingContext(c, e.context, limit)
	if len(docs) == 0 {
		return Skipped(noContext)
	}
	var reply claimsReply
	fields := []field{{"context", docs}, {"output", clipText(c.Output, limit)}}
	if r := e.ask(ctx, faithfulnessPrompt, fields, &reply); r != nil {
		return *r
	}
	if len(reply.Claims) == 0 {
		return Scored(1, "the output makes no factual claims to check", map[string]float64{"claims": 0})
	}
	return claimsResult(reply, func(supported, total int) string {
		return fmt.Sprintf("%d of %s supported by %s", supported, plural(total, "claim"), from)
	}, "contradicted", "unsupported")
}

// claimsResult scores supported claims / claims, with a metric per verdict
// and, in the reason, a few claims of each bad verdict. A verdict the judge
// made up counts as the last bad one.
func claimsResult(reply claimsReply, summary func(supported, total int) string, bad ...string) Result {
	verdicts := append([]string{"supported"}, bad...)
	n, ex := countClaims(reply.Claims, verdicts...)
	total := len(reply.Claims)
	m := map[string]float64{"claims": float64(total)}
	for _, v := range verdicts {
		m[v] = float64(n[v])
	}
	text := summary(n["supported"], total)
	for _, v := range bad {
		if len(ex[v]) > 0 {
			text += "; " + v + ": " + quoted(ex[v])
		}
	}
	return Scored(float64(n["supported"])/float64(total), judgeReason(text, reply.Reason), m)
}

// hallucination: supported claims / claims, claims classified supported,
// contradicted or fabricated; without context, internal contradictions and
// invented references. The score is the non-hallucinated share.
func runHallucination(e *ragJudge, ctx context.Context, c *adapter.Case) Result {
	limit := e.limit()
	if strings.TrimSpace(c.Output) == "" {
		return Skipped("no output (the final assistant text) to check")
	}
	docs, from := groundingContext(c, e.context, limit)
	p := hallucinationPrompt
	fields := []field{}
	if len(docs) > 0 {
		fields = append(fields, field{"context", docs})
	} else {
		from = "no context (internal consistency and invented references only)"
		p = hallucinationNoContextPrompt
	}
	if c.Input != "" {
		fields = append(fields, field{"input", clipText(c.Input, limit)})
	}
	fields = append(fields, field{"output", clipText(c.Output, limit)})
	var reply claimsReply
	if r := e.ask(ctx, p, fields, &reply); r != nil {
		return *r
	}
	if len(reply.Claims) == 0 {
		return Scored(1, "the output makes no factual claims", map[string]float64{"claims": 0})
	}
	return claimsResult(reply, func(supported, total int) string {
		return fmt.Sprintf("%d of %s hallucinated (checked against %s)", total-supported, plural(total, "claim"), from)
	}, "contradicted", "fabricated")
}

// answer_relevancy: directness, completeness and focus on 1..5, each
// normalised to 0..1 and averaged.
func runAnswerRelevancy(e *ragJudge, ctx context.Context, c *adapter.Case) Result {
	limit := e.limit()
	if strings.TrimSpace(c.Input) == "" || strings.TrimSpace(c.Output) == "" {
		return Skipped("answer_relevancy needs the user's input and the final output; this case lacks %s", missingIO(c))
	}
	var reply answerRelevancyReply
	if r := e.ask(ctx, answerRelevancyPrompt, []field{{"input", clipText(c.Input, limit)}, {"output", clipText(c.Output, limit)}}, &reply); r != nil {
		return *r
	}
	return rubric(reply.Reason, []rubricItem{{"directness", reply.Directness}, {"completeness", reply.Completeness}, {"focus", reply.Focus}})
}

func missingIO(c *adapter.Case) string {
	var miss []string
	if strings.TrimSpace(c.Input) == "" {
		miss = append(miss, "an input")
	}
	if strings.TrimSpace(c.Output) == "" {
		miss = append(miss, "an output")
	}
	return strings.Join(miss, " and ")
}

type rubricItem struct {
	name string
	v    num
}

// rubric scores 1..5 ratings: the mean of (rating-1)/4.
func rubric(judgeSaid string, items []rubricItem) Result {
	m := map[string]float64{}
	sum := 0.0
	var parts []string
	for _, it := range items {
		if !it.v.ok {
			return Errored("the judge's reply has no `%s`", it.name)
		}
		if it.v.v < 1 || it.v.v > 5 {
			return Errored("the judge rated %s %s, outside 1..5", it.name, fmtNum(it.v.v))
		}
		m[it.name] = it.v.v
		sum += (it.v.v - 1) / 4
		parts = append(parts, fmt.Sprintf("%s %s/5", it.name, fmtNum(it.v.v)))
	}
	return Scored(sum/float64(len(items)), judgeReason(strings.Join(parts, ", "), judgeSaid), m)
}

// chunks are the retrieved documents in rank order (else eval.context, else
// the `context` option), as the judge sees them.
type chunkData struct {
	Chunk int    `json:"chunk"`
	Text  string `json:"text"`
}

func chunksOf(c *adapter.Case, cfg []string, limit int) ([]chunkData, string) {
	var texts []string
	from := ""
	if len(c.Documents) > 0 {
		for _, d := range c.Documents {
			if t := d.Content; t != "" {
				texts = append(texts, t)
			} else if d.ID != "" {
				texts = append(texts, "(document "+d.ID+", no content recorded)")
			}
		}
		from = "retrieved documents"
	}
	if len(texts) == 0 {
		if ctxs, src := groundingContext(c, cfg, limit); len(ctxs) > 0 {
			texts, from = ctxs, src
		}
	}
	out := make([]chunkData, len(texts))
	for i, t := range texts {
		out[i] = chunkData{Chunk: i + 1, Text: clipText(t, limit)}
	}
	return out, from
}

// numbered is a verdict on one numbered item (a step, a chunk …).
type numbered interface{ index() num }

// verdictsByIndex maps the judge's per-item verdicts to items 1..n; every
// item must have one.
func verdictsByIndex[T numbered](list []T, n int, what string) (map[int]T, error) {
	out := make(map[int]T, n)
	for _, v := range list {
		i := v.index()
		if !i.ok || i.v < 1 || i.v > float64(n) || i.v != float64(int(i.v)) {
			continue
		}
		out[int(i.v)] = v
	}
	for i := 1; i <= n; i++ {
		if _, ok := out[i]; !ok {
			return nil, fmt.Errorf("the judge gave no verdict for %s %d of %d", what, i, n)
		}
	}
	return out, nil
}

// askVerdicts asks the judge p for a reply with a verdict per item, and
// returns them by item 1..n (what names the items). On failure it returns
// the result to report instead (see judgeBase.ask).
func askVerdicts[T numbered](b judgeBase, ctx context.Context, p judgePrompt, fields []field, reply interface{ items() []T }, n int, what string) (map[int]T, *Result) {
	if r := b.ask(ctx, p, fields, reply); r != nil {
		return nil, r
	}
	byIdx, err := verdictsByIndex(reply.items(), n, what)
	if err != nil {
		r := Errored("%v", err)
		return nil, &r
	}
	return byIdx, nil
}

// contextual_relevance: mean per-chunk relevance to the input (relevant 1,
// partially relevant 0.5, irrelevant 0).
func runContextualRelevance(e *ragJudge, ctx context.Context, c *adapter.Case) Result {
	limit := e.limit()
	if strings.TrimSpace(c.Input) == "" {
		return Skipped("no input (the user's question) to judge the retrieved context against")
	}
	chunks, from := chunksOf(c, e.context, limit)
	if len(chunks) == 0 {
		return noChunks
	}
	var reply chunksReply
	fields := []field{{"input", clipText(c.Input, limit)}, {"context_chunks", chunks}}
	byIdx, r := askVerdicts(e.judgeBase, ctx, contextualRelevancePrompt, fields, &reply, len(chunks), "chunk")
	if r != nil {
		return *r
	}
	var rel, part, irr int
	var irrelevant []string
	for i := 1; i <= len(chunks); i++ {
		switch byIdx[i].Verdict {
		case "relevant":
			rel++
		case "partially_relevant", "partially relevant", "partial":
			part++
		default:
			irr++
			irrelevant = append(irrelevant, fmt.Sprint(i))
		}
	}
	score := (float64(rel) + 0.5*float64(part)) / float64(len(chunks))
	summary := fmt.Sprintf("%d relevant, %d partially relevant, %d irrelevant of %s (%s)", rel, part, irr, plural(len(chunks), "chunk"), from)
	if len(irrelevant) > 0 {
		summary += "; irrelevant: chunk " + strings.Join(irrelevant, ", ")
	}
	return Scored(score, judgeReason(summary, reply.Reason),
		map[string]float64{"chunks": float64(len(chunks)), "relevant": float64(rel), "partially_relevant": float64(part), "irrelevant": float64(irr)})
}

var noChunks = Skipped("no retrieved documents or context on this case")

// expectedAndChunks gives what contextual_precision and contextual_recall
// both need — the expected output and the context chunks — or the skipped
// result that says which is missing.
func expectedAndChunks(c *adapter.Case, cfgContext []string, limit int) (exp string, chunks []chunkData, from string, skip *Result) {
	exp, ok := expectedOutputText(c)
	if !ok {
		r := Skipped("no expected output: set the span attribute eval.expected.output")
		return "", nil, "", &r
	}
	if chunks, from = chunksOf(c, cfgContext, limit); len(chunks) == 0 {
		return "", nil, "", &noChunks
	}
	return exp, chunks, from, nil
}

// contextual_precision: are the relevant chunks ranked first? Rank-weighted
// precision: sum over relevant ranks k of precision@k, over the relevant count.
func runContextualPrecision(e *ragJudge, ctx context.Context, c *adapter.Case) Result {
	limit := e.limit()
	exp, chunks, from, skip := expectedAndChunks(c, e.context, limit)
	if skip != nil {
		return *skip
	}
	fields := []field{}
	if c.Input != "" {
		fields = append(fields, field{"input", clipText(c.Input, limit)})
	}
	fields = append(fields, field{"expected_output", clipText(exp, limit)}, field{"context_chunks", chunks})
	var reply chunksReply
	byIdx, r := askVerdicts(e.judgeBase, ctx, contextualPrecisionPrompt, fields, &reply, len(chunks), "chunk")
	if r != nil {
		return *r
	}
	relevant, sum := 0, 0.0
	var ranks []string
	for k := 1; k <= len(chunks); k++ {
		if v := byIdx[k].Verdict; v == "yes" || v == "relevant" || v == "true" {
			relevant++
			sum += float64(relevant) / float64(k)
			ranks = append(ranks, fmt.Sprint(k))
		}
	}
	m := map[string]float64{"chunks": float64(len(chunks)), "relevant": float64(relevant)}
	if relevant == 0 {
		return Scored(0, judgeReason(fmt.Sprintf("none of %s (%s) is relevant to the expected output", plural(len(chunks), "chunk"), from), reply.Reason), m)
	}
	summary := fmt.Sprintf("%d of %s relevant, at rank %s", relevant, plural(len(chunks), "chunk"), strings.Join(ranks, ", "))
	return Scored(sum/float64(relevant), judgeReason(summary, reply.Reason), m)
}

// contextual_recall: statements of the expected output attributable to the
// context / statements.
func runContextualRecall(e *ragJudge, ctx context.Context, c *adapter.Case) Result {
	limit := e.limit()
	exp, chunks, from, skip := expectedAndChunks(c, e.context, limit)
	if skip != nil {
		return *skip
	}
	var reply statementsReply
	if r := e.ask(ctx, contextualRecallPrompt, []field{{"expected_output", clipText(exp, limit)}, {"context_chunks", chunks}}, &reply); r != nil {
		return *r
	}
	total := len(reply.Statements)
	if total == 0 {
		return Scored(1, "the expected output has no statements to attribute", map[string]float64{"statements": 0})
	}
	att := tally{max: 2}
	for _, s := range reply.Statements {
		att.add(s.Attributable.v, func() string { return fmt.Sprintf("%q", clipText(s.Statement, 120)) })
	}
	summary := fmt.Sprintf("%d of %s of the expected output found in the %s", att.passed, plural(total, "statement"), from) +
		att.note("missing", ", ")
	return Scored(float64(att.passed)/float64(total), judgeReason(summary, reply.Reason),
		map[string]float64{"statements": float64(total), "attributable": float64(att.passed)})
}
