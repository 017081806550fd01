package sim

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// gen is a generation request parsed from any protocol.
type gen struct {
	route        string
	prompt       string
	promptTokens int
	maxTokens    int
	ignoreEOS    bool
	temperature  float64
	seed         int64
	stream       bool
	includeUsage bool
	continuous   bool
	chat         bool // pays the chat route's overhead
	minTokens    int
	// tools are the tools the request offered, choice its tool_choice
	// (readChoice); tool is the tool its turn calls (callTool), "" for
	// none, and required that tool's required properties.
	tools    []offered
	choice   string
	tool     string
	required []string
	metrics  bool // vLLM's metrics object on the usage chunk (include_metrics)
	// The prompt's tokens for the prefix cache (promptKeys): a chat
	// request's messages, a raw prompt's template tokens before its text,
	// or the ids it came as.
	msgs []message
	wrap int
	ids  []int
	// uncached is llama.cpp's cache_prompt: false: the prompt cache is
	// neither read nor written.
	uncached bool
}

// exchange is one request's state while it is served.
type exchange struct {
	g       *gen
	id      string
	created int64
	arrived time.Time
	first   time.Time // first token left
	// The engine's view (Event.At): when the request got a slot, and when
	// the steps that made its first and its latest tokens ended.
	admitted, firstAt, lastAt time.Time
	cached                    int    // prompt tokens from the prefix cache
	text                      []byte // all output text so far
	ids                       []int  // all output token ids so far
	spec                      bool
	opened                    bool // a tool call's arguments have begun (cut)
}

// format writes one protocol's responses.
type format interface {
	contentType() string
	// begin is written before the first event (the chat role chunk).
	begin(b []byte, x *exchange) []byte
	// event writes one engine event; piece and ids are its new tokens.
	event(b []byte, x *exchange, ev Event, piece []byte, ids []int) []byte
	// end is written after the last event (usage chunk, [DONE]).
	end(b []byte, x *exchange, ev Event) []byte
	// whole is the non-streaming response.
	whole(x *exchange, ev Event) any
	// fail is an error reported inside a stream that already started.
	fail(b []byte, msg string) []byte
}

// serve runs a generation through the engine and writes it in format f.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, g *gen, f format) {
	fault := s.faultFor(g.route)
	if s.refuse(w, fault) {
		return
	}
	if n := s.open.Add(1); s.p.MaxConcurrent > 0 && int(n) > s.p.MaxConcurrent {
		s.open.Add(-1)
		writeJSON(w, 429, map[string]any{"error": "Model is overloaded", "error_type": "overloaded"})
		return
	}
	defer s.open.Add(-1)
	if g.maxTokens < 0 || g.promptTokens+g.maxTokens > s.p.ContextLength {
		openAIError(w, 400, fmt.Sprintf("prompt (%d tokens) plus max tokens (%d) exceeds the context length %d", g.promptTokens, g.maxTokens, s.p.ContextLength))
		return
	}
	ctx := r.Context()
	x, num := s.arrive(r, g)
	overhead := s.p.RequestOverheadMs
	if g.chat {
		overhead += s.p.Chat.PerRequestMs
	}
	if !sleep(ctx, ms(overhead)) {
		return
	}
	job, key, answer := s.job(g)
	st, err := s.eng.Submit(job)
	if err != nil {
		openAIError(w, 503, err.Error())
		return
	}
	tr := s.trace.begin(num, r.Header.Get("X-Request-Id"), g.route, r.Proto, g.promptTokens, g.maxTokens, x.arrived)
	if tr != nil && s.traceWire {
		tr.Headers, tr.Body = wire(r)
	}
	rp := &reply{s: s, w: w, r: r, f: f, x: x, st: st, tr: tr, fault: fault, status: "cancelled"}
	defer func() { s.trace.end(tr, st, rp.status) }()
	rp.strike, rp.strikeAt = s.strike(fault, max(min(g.maxTokens, job.Length), 1))
	if s.chance(fault.SlowHeaders) && !sleep(ctx, secs(fault.SlowHeadersS)) {
		s.eng.Cancel(st)
		return
	}
	rp.tokens = newTextGen(key)
	rp.tokens.answer, rp.tokens.words = answer, s.outWords
	rp.run(ctx)
}

// refuse answers a request the server will not take, while it loads or
// by an injected HTTP fault, and says whether it did.
func (s *Server) refuse(w http.ResponseWriter, fault Fault) bool {
	if s.loading() {
		openAIError(w, 503, "Loading model")
		return true
	}
	for _, c := range []struct {
		code int
		rate float64
	}{{500, fault.HTTP500}, {503, fault.HTTP503}, {429, fault.HTTP429}} {
		if s.chance(c.rate) {
			if c.code != 500 && fault.RetryAfter != "" {
				w.Header().Set("Retry-After", fault.RetryAfter)
			}
			openAIError(w, c.code, fmt.Sprintf("injected fault: HTTP %d", c.code))
			return true
		}
	}
	return false
}

// arrive numbers a request taken and starts its exchange; the request
// Profile.DieAfter names kills the server's handler.
func (s *Server) arrive(r *http.Request, g *gen) (*exchange, uint64) {
	x := &exchange{g: g, arrived: arrivedAt(r), spec: s.p.Spec != nil}
	num := s.ids.Add(1)
	if s.p.DieAfter > 0 && num >= uint64(s.p.DieAfter) {
		s.dieOne.Do(func() { close(s.died) })
		panic(http.ErrAbortHandler)
	}
	x.id = strconv.FormatUint(num, 10)
	x.created = x.arrived.Unix()
	return x, num
}

// strike picks the fault that strikes mid-stream, if one does, and the
// chunk it strikes at, one of the first n; -1 when none does.
func (s *Server) strike(fault Fault, n int) (string, int) {
	for _, c := range []struct {
		name string
		rate float64
	}{{"reset", fault.Reset}, {"stall", fault.Stall}, {"malformed", fault.Malformed}, {"truncate", fault.Truncate}} {
		if s.chance(c.rate) {
			return c.name, s.intn(n)
		}
	}
	return "", -1
}

// reply is one response while it is written: the engine's stream, the
// fault that strikes it, and the chunks held for the next write.
type reply struct {
	s      *Server
	w      http.ResponseWriter
	r      *http.Request
	f      format
	x      *exchange
	st     *Stream
	tr     *traceEntry
	fault  Fault
	tokens *textGen
	// status is the trace's: cancelled until the last chunk left, or the
	// fault that struck.
	status   string
	strike   string // the mid-stream fault, at chunk strikeAt
	strikeAt int
	chunks   int
	buf      []byte
	held     []int // the token counts of the chunks in buf not yet written
	// The chat route frames and detokenizes each chunk in turn: a queue
	// with one server whose service time is the per-chunk cost. Tracking
	// when each chunk is due (not sleeping a fixed time) keeps timer
	// oversleep from adding up.
	due     time.Time
	flusher *http.ResponseController
}

// run writes the engine's events as they come, until the last or until
// the client goes.
func (rp *reply) run(ctx context.Context) {
	if rp.x.g.stream {
		rp.head()
	}
	rp.flusher = http.NewResponseController(rp.w)
	rp.buf = rp.buf[:0]
	var evs []Event
	for {
		select {
		case <-rp.st.Ready():
		case <-ctx.Done():
			rp.s.eng.Cancel(rp.st)
			return
		}
		evs = rp.st.Take(evs[:0])
		for _, ev := range evs {
			if rp.event(ctx, ev) {
				return
			}
		}
	}
}

// head writes a stream's headers and what precedes its first event.
func (rp *reply) head() {
	h := rp.w.Header()
	h.Set("Content-Type", rp.f.contentType())
	h.Set("Cache-Control", "no-cache")
	if rp.s.p.Wire.CloseAfterStream && !rp.s.p.Wire.SilentClose && rp.r.ProtoMajor == 1 {
		h.Set("Connection", "close") // net/http closes after the handler
	}
	rp.w.WriteHeader(200)
	rp.buf = rp.f.begin(rp.buf[:0], rp.x)
	if len(rp.buf) > 0 {
		rp.w.Write(rp.buf)
	}
	http.NewResponseController(rp.w).Flush()
}

// event writes one engine event, and says whether the response is over.
func (rp *reply) event(ctx context.Context, ev Event) bool {
	s, x, g := rp.s, rp.x, rp.x.g
	start, nids := len(x.text), len(x.ids)
	x.text, x.ids = rp.tokens.next(x.text, x.ids, ev.Tokens)
	if ev.Tokens > 0 {
		if x.firstAt.IsZero() {
			x.firstAt, x.admitted = ev.At, rp.st.Admitted()
			rp.tr.first(x.admitted, x.firstAt)
		}
		x.cached = ev.Cached
		x.lastAt = ev.At
	}
	if !g.stream {
		if ev.Done {
			s.observe(x, ev)
			writeJSON(rp.w, 200, rp.f.whole(x, ev))
			rp.tr.chunk(time.Now(), ev.Total)
			rp.status = "ok"
		}
		return ev.Done
	}
	if g.chat && s.p.Chat.PerChunkMs > 0 {
		rp.due = later(rp.due, time.Now()).Add(ms(s.p.Chat.PerChunkMs))
		if !sleep(ctx, time.Until(rp.due)) {
			s.eng.Cancel(rp.st)
			return true
		}
	}
	if rp.chunks == rp.strikeAt && rp.struck(ctx) {
		return true
	}
	rp.chunks++
	rp.buf = rp.f.event(rp.buf, x, ev, x.text[start:], x.ids[nids:])
	rp.held = append(rp.held, ev.Tokens)
	if ev.Done {
		s.observe(x, ev)
		rp.buf = rp.f.end(rp.buf, x, ev)
		if rp.tr != nil && x.opened {
			rp.tr.Tool, rp.tr.ToolTokens = g.tool, ev.Total-s.reasoned(g, ev.Total)
		}
	}
	if len(rp.held) < max(s.p.Wire.EventsPerWrite, 1) && !ev.Done {
		return false // coalesced with the next chunks (Wire.EventsPerWrite)
	}
	rp.write()
	if !ev.Done {
		return false
	}
	if rp.status == "cancelled" {
		rp.status = "ok"
	}
	if s.p.Wire.CloseAfterStream && s.p.Wire.SilentClose && rp.r.ProtoMajor == 1 {
		closeSilently(rp.w)
	}
	return true
}

// struck strikes the mid-stream fault, and says whether it ended the
// response; a reset drops the connection.
func (rp *reply) struck(ctx context.Context) bool {
	switch rp.strike {
	case "reset":
		rp.s.eng.Cancel(rp.st)
		rp.status = "fault: reset"
		panic(http.ErrAbortHandler) // the server drops the connection
	case "stall":
		rp.status = "fault: stall"
		if !sleep(ctx, secs(rp.fault.StallS)) {
			rp.s.eng.Cancel(rp.st)
			return true
		}
	case "malformed":
		rp.buf = append(rp.buf, "data: {\"choices\": [{\"text\": \n\n"...)
	case "truncate":
		rp.s.eng.Cancel(rp.st)
		rp.status = "fault: truncate"
		return true
	}
	return false
}

// write writes and flushes the chunks held, and stamps when their tokens
// left.
func (rp *reply) write() {
	rp.w.Write(rp.buf)
	rp.flusher.Flush()
	rp.buf = rp.buf[:0]
	now := time.Now()
	for _, n := range rp.held {
		if rp.x.first.IsZero() && n > 0 {
			rp.x.first = now
		}
		rp.tr.chunk(now, n)
	}
	rp.held = rp.held[:0]
}

// engineTimes are the server-side timings real engines report, taken from
// the engine's step times, not from when the chunks were written: prompt is
// from the slot to the first token (prefill), decode from the first token
// to the last (the steps that made tokens 2..n, so it covers n−1 tokens).
func (x *exchange) engineTimes() (prompt, decode time.Duration) {
	if x.firstAt.IsZero() {
		return 0, 0
	}
	return x.firstAt.Sub(x.admitted), x.lastAt.Sub(x.firstAt)
}

// observe feeds the latency histograms of /metrics.
func (s *Server) observe(x *exchange, ev Event) {
	if x.first.IsZero() {
		x.first = time.Now()
	}
	s.hist.ttft.observe(x.first.Sub(x.arrived).Seconds())
	if ev.Total > 1 {
		s.hist.itl.observe(time.Since(x.first).Seconds() / float64(ev.Total-1))
	}
	s.hist.e2e.observe(time.Since(x.arrived).Seconds())
}

func (s *Server) faultFor(route string) Fault {
	if f, ok := s.p.Faults[route]; ok {
		return f
	}
	return s.p.Faults["*"]
}

// later is a, unless a is more than a timer's oversleep (1 ms) before b:
// then the server was idle, not late, and b is when work resumes.
func later(a, b time.Time) time.Time {
	if a.Before(b.Add(-time.Millisecond)) {
		return b
	}
	return a
}

func ms(v float64) time.Duration   { return time.Duration(v * float64(time.Millisecond)) }
func secs(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }

// sleep waits d or until ctx is done; it reports whether d passed.
func sleep(ctx interface{ Done() <-chan struct{} }, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// closeSilently ends a chunked response and closes its connection without
// having announced it (no Connection: close), as llama-server does.
func closeSilently(w http.ResponseWriter) {
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	rw.WriteString("0\r\n\r\n")
	rw.Flush()
	conn.Close()
}

// job is what the engine runs for g: its output length (where the model
// would stop, unless EOS is ignored), its prefix-cache blocks and its
// speculative acceptance; key seeds its text and answer is the built-in
// question's answer, if g asked one.
func (s *Server) job(g *gen) (job Job, key uint64, answer []string) {
	key = requestKey(s.p.Seed, g.prompt, g.temperature, g.seed, s.fresh)
	length := g.maxTokens
	if !g.ignoreEOS || s.p.Wire.IgnoreIgnoreEOS {
		length = outputLength(key, s.p.EOSProbability, g.maxTokens)
	}
	length = max(length, min(g.minTokens, g.maxTokens))
	s.callTool(g, key)
	length = s.callLength(length, g)
	answer = answerFor(g.prompt, s.p.Wire.WrongAnswers)
	if answer != nil && (!g.ignoreEOS || s.p.Wire.IgnoreIgnoreEOS) {
		length = min(len(answer), g.maxTokens) // the answer, then EOS
	}
	job = Job{PromptTokens: max(g.promptTokens, 1), MaxTokens: g.maxTokens, Length: length}
	if s.p.PrefixCache && !g.uncached {
		keys := s.promptKeys(g)
		job.Blocks = blockHashes(keys, s.p.PrefixCacheBlock)
		// The reply is cached after its prompt when it ends, as vLLM and
		// SGLang keep a finished sequence's blocks: it is drawn now from
		// the same seed the stream's text is.
		reply := newTextGen(key)
		reply.answer, reply.words = answer, s.outWords
		text, _ := reply.next(nil, nil, length)
		job.Reply = blockHashes(s.replyKeys(keys, g, string(text)), s.p.PrefixCacheBlock)
	}
	if sp := s.p.Spec; sp != nil && sp.AcceptanceRepetitive > 0 {
		job.Acceptance, job.Accept = sp.AcceptanceFor(Repetition(g.prompt)), true
	}
	return job, key, answer
}
