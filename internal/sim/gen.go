package sim

import (
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
	tool         string // answer with a call of this tool (Wire.ToolCalls)
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
	if s.loading() {
		openAIError(w, 503, "Loading model")
		return
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
			return
		}
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
	x := &exchange{g: g, arrived: arrivedAt(r), spec: s.p.Spec != nil}
	num := s.ids.Add(1)
	if s.p.DieAfter > 0 && num >= uint64(s.p.DieAfter) {
		s.dieOne.Do(func() { close(s.died) })
		panic(http.ErrAbortHandler)
	}
	x.id = strconv.FormatUint(num, 10)
	x.created = x.arrived.Unix()
	overhead := s.p.RequestOverheadMs
	if g.chat {
		overhead += s.p.Chat.PerRequestMs
	}
	if !sleep(ctx, ms(overhead)) {
		return
	}
	job, key, answer := s.job(g)
	length := job.Length
	st, err := s.eng.Submit(job)
	if err != nil {
		openAIError(w, 503, err.Error())
		return
	}
	tr := s.trace.begin(num, r.Header.Get("X-Request-Id"), g.route, r.Proto, g.promptTokens, g.maxTokens, x.arrived)
	if tr != nil && s.traceWire {
		tr.Headers, tr.Body = wire(r)
	}
	status := "cancelled"
	defer func() { s.trace.end(tr, st, status) }()

	// Faults that strike mid-stream pick the chunk they strike at.
	strikeAt := -1
	var strike string
	for _, c := range []struct {
		name string
		rate float64
	}{{"reset", fault.Reset}, {"stall", fault.Stall}, {"malformed", fault.Malformed}, {"truncate", fault.Truncate}} {
		if s.chance(c.rate) {
			strike = c.name
			strikeAt = s.intn(max(min(g.maxTokens, length), 1))
			break
		}
	}
	if s.chance(fault.SlowHeaders) && !sleep(ctx, secs(fault.SlowHeadersS)) {
		s.eng.Cancel(st)
		return
	}

	gen := newTextGen(key)
	gen.answer, gen.words = answer, s.outWords
	var evs []Event
	var buf []byte
	if g.stream {
		w.Header().Set("Content-Type", f.contentType())
		w.Header().Set("Cache-Control", "no-cache")
		if s.p.Wire.CloseAfterStream && !s.p.Wire.SilentClose && r.ProtoMajor == 1 {
			w.Header().Set("Connection", "close") // net/http closes after the handler
		}
		w.WriteHeader(200)
		buf = f.begin(buf[:0], x)
		if len(buf) > 0 {
			w.Write(buf)
		}
		http.NewResponseController(w).Flush()
	}
	flusher := http.NewResponseController(w)
	chunks := 0
	// held is the token counts of the chunks in buf not yet written.
	var held []int
	perWrite := max(s.p.Wire.EventsPerWrite, 1)
	buf = buf[:0]
	// The chat route frames and detokenizes each chunk in turn: a queue
	// with one server whose service time is the per-chunk cost. Tracking
	// when each chunk is due (not sleeping a fixed time) keeps timer
	// oversleep from adding up.
	var due time.Time
	for {
		select {
		case <-st.Ready():
		case <-ctx.Done():
			s.eng.Cancel(st)
			return
		}
		evs = st.Take(evs[:0])
		for _, ev := range evs {
			start := len(x.text)
			nids := len(x.ids)
			x.text, x.ids = gen.next(x.text, x.ids, ev.Tokens)
			if ev.Tokens > 0 {
				if x.firstAt.IsZero() {
					x.firstAt, x.admitted = ev.At, st.Admitted()
				}
				x.cached = ev.Cached
				x.lastAt = ev.At
			}
			if !g.stream {
				if ev.Done {
					s.observe(x, ev)
					writeJSON(w, 200, f.whole(x, ev))
					tr.chunk(time.Now(), ev.Total)
					status = "ok"
					return
				}
				continue
			}
			if g.chat && s.p.Chat.PerChunkMs > 0 {
				due = later(due, time.Now()).Add(ms(s.p.Chat.PerChunkMs))
				if !sleep(ctx, time.Until(due)) {
					s.eng.Cancel(st)
					return
				}
			}
			if chunks == strikeAt {
				switch strike {
				case "reset":
					s.eng.Cancel(st)
					status = "fault: reset"
					panic(http.ErrAbortHandler) // the server drops the connection
				case "stall":
					status = "fault: stall"
					if !sleep(ctx, secs(fault.StallS)) {
						s.eng.Cancel(st)
						return
					}
				case "malformed":
					buf = append(buf, "data: {\"choices\": [{\"text\": \n\n"...)
				case "truncate":
					s.eng.Cancel(st)
					status = "fault: truncate"
					return
				}
			}
			chunks++
			buf = f.event(buf, x, ev, x.text[start:], x.ids[nids:])
			held = append(held, ev.Tokens)
			if ev.Done {
				s.observe(x, ev)
				buf = f.end(buf, x, ev)
			}
			if len(held) < perWrite && !ev.Done {
				continue // coalesced with the next chunks (Wire.EventsPerWrite)
			}
			w.Write(buf)
			flusher.Flush()
			buf = buf[:0]
			now := time.Now()
			for _, n := range held {
				if x.first.IsZero() && n > 0 {
					x.first = now
				}
				tr.chunk(now, n)
			}
			held = held[:0]
			if ev.Done {
				if status == "cancelled" {
					status = "ok"
				}
				if s.p.Wire.CloseAfterStream && s.p.Wire.SilentClose && r.ProtoMajor == 1 {
					closeSilently(w)
				}
				return
			}
		}
	}
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
