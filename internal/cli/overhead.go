package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/runner"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// paired sends each prompt twice, through the raw endpoint and through the
// chat endpoint, one after the other and in alternating order, so drift in
// the server hits both alike.
type paired struct {
	raw, chat         *backend.Backend
	rawName, chatName string
}

// isChat says which endpoint request i goes to: pairs (2k, 2k+1) share a
// prompt, and every other pair starts with chat.
func isChat(i int) bool { return (i%2 == 1) != ((i/2)%2 == 1) }

func (p *paired) Do(ctx context.Context, clock record.Clock, req record.Request, rec *record.Record) {
	if isChat(rec.ID) {
		rec.Endpoint = p.chatName
		p.chat.Do(ctx, clock, req, rec)
		return
	}
	rec.Endpoint = p.rawName
	p.raw.Do(ctx, clock, req, rec)
}

// overheadCmd is tokperf overhead: the raw generation endpoint against the
// chat API on the same server, paired request by request.
func overheadCmd(ctx context.Context, args []string, e *env) error {
	fs := flag.NewFlagSet("overhead", flag.ContinueOnError)
	var f loadFlags
	f.register(fs, "overhead")
	fs.Lookup("output-tokens").DefValue = "200"
	f.outputTokens = 200
	f.conc.Set("1,8,32")
	fs.Lookup("concurrency").DefValue, fs.Lookup("c").DefValue = "1,8,32", "1,8,32"
	if err := parse(fs, args, e); err != nil {
		return err
	}
	if err := f.check(fs); err != nil {
		return err
	}
	if len(f.rates) > 0 {
		return usagef("overhead is closed loop: give -c levels, not --rate")
	}
	if f.endpoint == "chat" {
		return usagef("--endpoint names the raw endpoint to compare with chat; chat is the other side")
	}
	maxC := 1
	for _, c := range f.conc {
		maxC = max(maxC, c)
	}
	sess, err := connect(ctx, "overhead", &f, e)
	if err != nil {
		return err
	}
	defer sess.close()
	setup := sess.setup
	raw, err := sess.backend(ctx, setup.Endpoint, maxC)
	if err != nil {
		return err
	}
	defer raw.Close()
	chat, err := sess.backend(ctx, "chat", maxC)
	if err != nil {
		return err
	}
	defer chat.Close()
	setup.Route, setup.Client = raw.Route(), raw.Client()
	setup.Load = record.Load{Concurrency: f.conc, Requests: f.requests, Warmup: f.warmup, TimeoutS: f.timeout.Seconds()}
	out, w, clock, err := create(f.out, "overhead", setup)
	if err != nil {
		return err
	}
	wl := f.workload()
	var writeErr error
	r := &runner.Runner{
		Backend: &paired{raw: raw, chat: chat, rawName: raw.Route(), chatName: chat.Route()},
		Source:  func(i int) record.Request { return wl.Request(i / 2) },
		Clock:   clock,
		Sink: func(rec record.Record) {
			if err := w.Write(rec); err != nil && writeErr == nil {
				writeErr = err
			}
		},
	}
	fmt.Fprintf(e.stderr, "%s\noverhead: %s against %s, each prompt through both, interleaved\n", describe(setup), chat.Route(), raw.Route())
	var levels []overheadLevel
	for i, c := range f.conc {
		n := f.requests
		if n == 0 {
			n = 2 * max(4, 2*c)
		}
		warm := f.warmup
		if warm < 0 {
			warm = c
		}
		warm += warm % 2 // keep the pairs aligned
		n += n % 2
		fmt.Fprintf(e.stderr, "C=%d: %d warm-up, then %d requests (half each) ...\n", c, warm, n)
		recs := r.Stage(ctx, runner.Stage{Index: i, Concurrency: c, Requests: n, Warmup: warm, Timeout: f.timeout})
		levels = append(levels, compareLevel(c, recs, raw.Route(), chat.Route()))
		if ctx.Err() != nil {
			break
		}
	}
	interrupted := ctx.Err() != nil
	closeErr := w.Close(interrupted)
	fmt.Fprintln(e.stdout)
	printOverhead(e.stdout, setup, raw.Route(), chat.Route(), levels)
	fmt.Fprintf(e.stdout, "results: %s\n", out)
	switch {
	case writeErr != nil:
		return writeErr
	case closeErr != nil:
		return closeErr
	case interrupted:
		return errInterrupted
	}
	return nil
}

func describe(s record.Setup) string {
	d := fmt.Sprintf("%s on %s", s.Server.Engine, s.URL)
	if s.Simulated {
		d += fmt.Sprintf(" (embedded simulator, profile %s)", s.Profile)
	}
	return d + ", model " + s.Model
}

// overheadLevel is one concurrency level's paired comparison.
type overheadLevel struct {
	C                     int
	Raw, Chat             summary.Stage
	TTFT, TPOT            [2]float64 // difference chat − raw and its 95% half width
	ICLRaw, ICLChat       float64    // mean gap between chunks
	RawAgg, ChatAgg       float64    // each endpoint's tokens over the shared window
	PromptRaw, PromptChat float64
}

func compareLevel(c int, recs []record.Record, rawRoute, chatRoute string) overheadLevel {
	var raw, chat []record.Record
	for _, r := range recs {
		if r.Endpoint == chatRoute {
			chat = append(chat, r)
		} else {
			raw = append(raw, r)
		}
	}
	l := overheadLevel{C: c, Raw: summary.Of(raw, 0), Chat: summary.Of(chat, 0)}
	pick := func(rs []record.Record, f func(r *record.Record) (float64, bool)) []float64 {
		var out []float64
		for i := range rs {
			if v, ok := f(&rs[i]); ok && rs[i].OK() {
				out = append(out, v)
			}
		}
		return out
	}
	ttft := func(r *record.Record) (float64, bool) {
		return float64(r.FirstToken-r.Sent) / 1e6, r.FirstToken != record.Unset
	}
	tpot := func(r *record.Record) (float64, bool) {
		n := r.OutputTokens - firstTokens(r)
		return float64(r.LastToken-r.FirstToken) / 1e6 / float64(n), n > 0
	}
	prompt := func(r *record.Record) (float64, bool) { return float64(r.PromptTokens), r.PromptTokens > 0 }
	l.TTFT[0], l.TTFT[1] = stats.MeanDiff(pick(raw, ttft), pick(chat, ttft))
	l.TPOT[0], l.TPOT[1] = stats.MeanDiff(pick(raw, tpot), pick(chat, tpot))
	l.ICLRaw, l.ICLChat = l.Raw.ICL.Mean, l.Chat.ICL.Mean
	// Both endpoints share one window, so each one's own aggregate is
	// estimated by Little's law from its requests' latency.
	agg := func(s summary.Stage) float64 {
		return float64(c) * float64(s.OutputTokens) / (s.E2E.Mean * float64(s.E2E.N) / 1e3)
	}
	l.RawAgg, l.ChatAgg = agg(l.Raw), agg(l.Chat)
	l.PromptRaw, l.PromptChat = meanOf(pick(raw, prompt)), meanOf(pick(chat, prompt))
	return l
}

func firstTokens(r *record.Record) int {
	if len(r.Chunks) == 0 {
		return 0
	}
	return r.Chunks[0].Tokens
}

func meanOf(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func ci(v [2]float64) string {
	if math.IsNaN(v[1]) {
		return fmt.Sprintf("%+.1f", v[0])
	}
	return fmt.Sprintf("%+.1f ± %.1f", v[0], v[1])
}

// significant says a difference's 95% interval excludes zero.
func significant(v [2]float64) bool { return !math.IsNaN(v[1]) && math.Abs(v[0]) > v[1] }

func printOverhead(w io.Writer, setup record.Setup, rawRoute, chatRoute string, levels []overheadLevel) {
	fmt.Fprintf(w, "%s\nchat %s against raw %s: the same prompts, interleaved; differences are chat − raw with 95%% intervals;\naggregate is C × tokens / E2E for each endpoint (Little's law: both share one window)\n\n", describe(setup), chatRoute, rawRoute)
	fmt.Fprintln(w, "| C | TTFT ms raw / chat | Δ TTFT ms | TPOT ms raw / chat | Δ TPOT ms | decode tok/s raw / chat | aggregate tok/s raw / chat | prompt tokens raw / chat |")
	fmt.Fprintln(w, "|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, l := range levels {
		fmt.Fprintf(w, "| %d | %.1f / %.1f | %s | %.2f / %.2f | %s | %.1f / %.1f | %.1f / %.1f | %.0f / %.0f |\n",
			l.C, l.Raw.TTFT.Mean, l.Chat.TTFT.Mean, ci(l.TTFT), l.Raw.TPOT.Mean, l.Chat.TPOT.Mean, ci(l.TPOT),
			l.Raw.DecodeTokS.Mean, l.Chat.DecodeTokS.Mean, l.RawAgg, l.ChatAgg, l.PromptRaw, l.PromptChat)
	}
	fmt.Fprintln(w)
	for _, l := range levels {
		fmt.Fprintln(w, "reading: "+reading(l, setup.Workload.OutputTokens))
	}
}

// reading is the one-line interpretation of a level.
func reading(l overheadLevel, outputTokens int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "at C=%d chat adds %s ms to TTFT and %s ms per token (%+.0f%%)", l.C, ci(l.TTFT), ci(l.TPOT), 100*(l.Chat.TPOT.Mean/l.Raw.TPOT.Mean-1))
	if !significant(l.TTFT) && !significant(l.TPOT) {
		b.WriteString(": no significant difference")
		return b.String()
	}
	// When chat's chunks come further apart than the raw stream's, the chat
	// path paces the stream: its per-chunk cost is that gap, and the rest of
	// the TTFT difference is paid once per request.
	if significant(l.TPOT) && l.TPOT[0] > 0 && l.ICLChat > l.ICLRaw {
		fmt.Fprintf(&b, "; the chat path paces the stream at %.1f ms per chunk (the engine's chunks come every %.1f ms), so it costs about %.1f ms per chunk and %.1f ms per request",
			l.ICLChat, l.ICLRaw, l.ICLChat, l.TTFT[0]-l.ICLChat)
	} else {
		fmt.Fprintf(&b, "; the per-chunk cost hides behind the engine's step here, and about %.1f ms is paid per request", l.TTFT[0])
	}
	// What a short smoke test would show through each.
	n := 100.0
	smoke := func(s summary.Stage) float64 { return n / ((s.TTFT.Mean + (n-1)*s.TPOT.Mean) / 1e3) }
	fmt.Fprintf(&b, "; a %.0f-token smoke test reads %.0f tok/s through chat against %.0f raw", n, smoke(l.Chat), smoke(l.Raw))
	return b.String()
}
