package analyze

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// SelftestSchema names the JSON form of a Selftest and its version.
const SelftestSchema = "tokperf-selftest/1"

// Selftest is how far tokperf stays accurate on this machine: level by
// level of concurrent streams, what it measured against the simulator's
// ground truth, and its CPU cost against a bare reader's.
type Selftest struct {
	Schema string          `json:"schema"`
	File   string          `json:"file,omitempty"`
	Levels []SelftestLevel `json:"levels"`
	// AccurateUpTo is the highest level up to which every level was
	// accurate (0: not even the first).
	AccurateUpTo int `json:"accurate_up_to"`
	// CPUs is how many CPUs the client and the simulator shared.
	CPUs int `json:"cpus,omitempty"`
	// EndsBecause says why the accurate range ends at AccurateUpTo, from
	// what the first inaccurate level measured (Conclude): which figure
	// was off, and what the two processes used of the machine's CPUs.
	// Empty when every level was accurate.
	EndsBecause string `json:"ends_because,omitempty"`
}

// SelftestLevel is one level of streams.
type SelftestLevel struct {
	Streams      int           `json:"streams"`
	OfferedTokS  float64       `json:"offered_tok_s"`
	ReceivedTokS float64       `json:"received_tok_s"`
	CPU          time.Duration `json:"cpu_ns"`
	Tokens       int           `json:"tokens"`
	Chunks       int           `json:"chunks"`
	RSSMB        float64       `json:"memory_mb"`
	Errors       int           `json:"errors"`
	// TTFTErr, ITLErr and AggErr are relative errors against the truth.
	TTFTErr       float64       `json:"ttft_err"`
	ITLErr        float64       `json:"itl_p50_err"`
	AggErr        float64       `json:"aggregate_err"`
	BufferedShare float64       `json:"buffered_share"`
	BareCPU       time.Duration `json:"bare_cpu_ns"`
	BareChunks    int           `json:"bare_chunks"`
	Compared      bool          `json:"compared"` // the truth was there to compare with
	// Wall is how long the level's measured requests took; SimCPU the
	// simulator process's CPU meanwhile (0: not read).
	Wall   time.Duration `json:"wall_ns,omitempty"`
	SimCPU time.Duration `json:"sim_cpu_ns,omitempty"`
	// SimSteps and SimLateSteps are the simulator's engine steps during
	// the level and how many ran late (it had no CPU when due): the offered
	// rate then fell short, though its truth still says what it sent.
	SimSteps     float64 `json:"sim_steps,omitempty"`
	SimLateSteps float64 `json:"sim_late_steps,omitempty"`
	// HostDropped and HostRetrans are the machine's packets dropped at
	// its kernel's input queue and TCP segments resent during the level.
	HostDropped float64 `json:"host_dropped_packets,omitempty"`
	HostRetrans float64 `json:"host_tcp_retransmits,omitempty"`
	// OwnRetrans are the TCP segments the client's own connections resent
	// during the level (TCP_INFO), read when OwnRead: the machine's count
	// holds other processes' too.
	OwnRetrans int64 `json:"tcp_retransmits,omitempty"`
	OwnRead    bool  `json:"tcp_info_read,omitempty"`
}

// Truth is what the server says it sent for one request: when it arrived
// and when each chunk left, on the wall clock both processes share.
type Truth struct {
	Arrived      time.Time
	Chunks       []TruthChunk
	OutputTokens int
}

// TruthChunk is one chunk as the server sent it.
type TruthChunk struct {
	At     time.Time
	Tokens int
}

// Fill sets the level's client-side figures from its records.
func (l *SelftestLevel) Fill(recs []record.Record) {
	s := summary.Of(recs, l.Streams)
	l.ReceivedTokS, l.Tokens, l.Errors, l.BufferedShare = s.AggregateTokS, s.OutputTokens, s.Requests-s.OK, s.BufferedShare
	for _, rec := range recs {
		l.Chunks += len(rec.Chunks)
	}
}

// Compare sets the client's TTFT, median ITL and aggregate against the
// server's truth for the same requests (truth by record ID); start is the
// wall time of the client's clock offset 0.
func (l *SelftestLevel) Compare(recs []record.Record, truth map[int]Truth, start time.Time) {
	var ttftGot, ttftTrue float64
	var itlGot, itlTrue []stats.Weighted
	var first, last time.Time
	tokens, n := 0, 0
	for _, rec := range recs {
		t, ok := truth[rec.ID]
		if !ok || !rec.OK() || len(t.Chunks) == 0 || len(rec.Chunks) == 0 {
			continue
		}
		n++
		// The truth is when the first token left the server; the
		// difference is the time tokperf took to notice it.
		ttft, _ := rec.TTFT()
		ttftGot += float64(ttft)
		ttftTrue += float64(t.Chunks[0].At.Sub(start.Add(rec.Sent)))
		for i := 1; i < len(rec.Chunks); i++ {
			itlGot = append(itlGot, stats.Weighted{V: float64(rec.Chunks[i].At-rec.Chunks[i-1].At) / float64(rec.Chunks[i].Tokens), W: rec.Chunks[i].Tokens})
		}
		for i := 1; i < len(t.Chunks); i++ {
			itlTrue = append(itlTrue, stats.Weighted{V: float64(t.Chunks[i].At.Sub(t.Chunks[i-1].At)) / float64(t.Chunks[i].Tokens), W: t.Chunks[i].Tokens})
		}
		if first.IsZero() || t.Arrived.Before(first) {
			first = t.Arrived
		}
		if e := t.Chunks[len(t.Chunks)-1].At; e.After(last) {
			last = e
		}
		tokens += t.OutputTokens
	}
	if n == 0 {
		return
	}
	l.Compared = true
	l.TTFTErr = ttftGot/ttftTrue - 1
	l.ITLErr = stats.DescribeWeighted(itlGot).P50/stats.DescribeWeighted(itlTrue).P50 - 1
	l.AggErr = l.ReceivedTokS/(float64(tokens)/last.Sub(first).Seconds()) - 1
}

// PerChunk is tokperf's CPU per chunk in µs.
func (l SelftestLevel) PerChunk() float64 {
	return float64(l.CPU.Microseconds()) / float64(max(l.Chunks, 1))
}

// Accurate says the level was within 2% of the truth everywhere, with no error.
func (l SelftestLevel) Accurate() bool {
	return l.Compared && l.Errors == 0 && math.Abs(l.TTFTErr) <= 0.02 && math.Abs(l.ITLErr) <= 0.02 && math.Abs(l.AggErr) <= 0.02
}

// Conclude sets AccurateUpTo and EndsBecause from the levels.
func (s *Selftest) Conclude() {
	s.AccurateUpTo, s.EndsBecause = 0, ""
	for _, l := range s.Levels {
		if !l.Accurate() {
			s.EndsBecause = l.why(s.CPUs)
			break
		}
		s.AccurateUpTo = l.Streams
	}
}

// why says what went wrong at an inaccurate level and what it points to,
// from the level's own measurements: which figures were off; how much of
// the machine's cpus (0: unknown) the client and the simulator used; late
// simulator steps (the simulator lacked CPU) and chunks found waiting
// (the client read late).
func (l SelftestLevel) why(cpus int) string {
	var off []string
	switch {
	case l.Errors > 0:
		off = append(off, fmt.Sprintf("%d requests failed", l.Errors))
	case !l.Compared:
		off = append(off, "no ground truth to compare with")
	}
	for _, e := range []struct {
		name string
		v    float64
	}{{"TTFT", l.TTFTErr}, {"median ITL", l.ITLErr}, {"aggregate", l.AggErr}} {
		if l.Compared && math.Abs(e.v) > 0.02 {
			off = append(off, fmt.Sprintf("%s %+.1f%%", e.name, 100*e.v))
		}
	}
	out := fmt.Sprintf("at %d streams: %s", l.Streams, strings.Join(off, ", "))
	var causes []string
	if l.Wall > 0 {
		client := l.CPU.Seconds() / l.Wall.Seconds()
		c := fmt.Sprintf("the client used %.2f CPUs", client)
		if l.SimCPU > 0 {
			sim := l.SimCPU.Seconds() / l.Wall.Seconds()
			c += fmt.Sprintf(" and the simulator %.2f", sim)
			if cpus > 0 {
				c += fmt.Sprintf(", %.0f%% of the %d CPUs", 100*(client+sim)/float64(cpus), cpus)
				if client+sim >= 0.9*float64(cpus) {
					c += " (the machine was full)"
				}
			}
		}
		causes = append(causes, c)
	}
	if l.SimSteps > 0 && l.SimLateSteps > SimLateLimit*l.SimSteps {
		causes = append(causes, fmt.Sprintf("the simulator ran %.0f%% of its steps late (it lacked CPU)", 100*l.SimLateSteps/l.SimSteps))
	}
	switch {
	case l.OwnRead && (l.OwnRetrans > 0 || l.HostDropped > 0):
		// The client's own resends, and the machine's drops (which this
		// level's flood of streams makes as often as not), never the
		// machine's resends: other processes' are in them.
		c := fmt.Sprintf("the client's own connections resent %d TCP segments, each a stall of 200 ms or more", l.OwnRetrans)
		if l.HostDropped > 0 {
			c += fmt.Sprintf(", and the machine's kernel dropped %.0f packets at its input queue", l.HostDropped)
		}
		if l.HostDropped > 0 {
			c += " (raise net.core.netdev_max_backlog)"
		}
		causes = append(causes, c)
	case !l.OwnRead && (l.HostDropped > 0 || l.HostRetrans >= RetransMin):
		causes = append(causes, fmt.Sprintf("the kernel dropped %.0f packets at its input queue and resent %.0f TCP segments (the whole machine's counts), each a stall of 200 ms or more", l.HostDropped, l.HostRetrans)+backlogAdvice(l.HostDropped))
	}
	if l.BufferedShare > 0.01 {
		causes = append(causes, fmt.Sprintf("the client found %.1f%% of chunks already waiting (it read late)", 100*l.BufferedShare))
	}
	if len(causes) > 0 {
		out += "; " + strings.Join(causes, "; ")
	}
	return out
}

// backlogAdvice is the advice about the kernel's input queue, only where
// it dropped packets.
func backlogAdvice(dropped float64) string {
	if dropped > 0 {
		return " (raise net.core.netdev_max_backlog)"
	}
	return ""
}
