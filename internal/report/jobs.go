package report

import (
	"cmp"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/check"
	"github.com/tokperf/tokperf/internal/record"
)

// Short is what was measured, on one line: engine, URL, model.
func Short(s record.Setup) string {
	d := fmt.Sprintf("%s on %s", s.Server.Engine, s.URL)
	if s.Simulated {
		d += fmt.Sprintf(" (embedded simulator, profile %s%s)", s.Profile, virtualNote(s))
	}
	return d + ", model " + s.Model
}

// OverheadText writes the paired comparison of the raw endpoint with the
// chat API, level by level, and a reading of each level.
func OverheadText(w io.Writer, o *analyze.Overhead) {
	fmt.Fprintf(w, "%s\nchat %s against raw %s: the same prompts, interleaved; differences are chat − raw with 95%% intervals;\naggregate is C × tokens / E2E for each endpoint (Little's law: both share one window)\n\n", Short(o.Setup), o.ChatRoute, o.RawRoute)
	fmt.Fprintln(w, "| C | TTFT ms raw / chat | Δ TTFT ms | TPOT ms raw / chat | Δ TPOT ms | decode tok/s raw / chat | aggregate tok/s raw / chat | prompt tokens raw / chat |")
	fmt.Fprintln(w, "|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, l := range o.Levels {
		fmt.Fprintf(w, "| %d | %.1f / %.1f | %s | %.2f / %.2f | %s | %.1f / %.1f | %.1f / %.1f | %.0f / %.0f |\n",
			l.C, l.Raw.TTFT.Mean, l.Chat.TTFT.Mean, l.TTFT, l.Raw.TPOT.Mean, l.Chat.TPOT.Mean, l.TPOT,
			l.Raw.DecodeTokS.Mean, l.Chat.DecodeTokS.Mean, l.RawAggTokS, l.ChatAggTokS, l.PromptRaw, l.PromptChat)
	}
	fmt.Fprintln(w)
	for _, l := range o.Levels {
		fmt.Fprintln(w, "reading: "+l.Reading)
	}
	for _, l := range o.Levels {
		raw, chat := l.Raw.Requests-l.Raw.OK-l.Raw.Cancelled, l.Chat.Requests-l.Chat.OK-l.Chat.Cancelled
		if raw+chat > 0 {
			fmt.Fprintf(w, "C=%d: %d of %s failed (raw %d, chat %d) and are left out of the figures above\n", l.C, raw+chat, record.Plural(l.Raw.Requests+l.Chat.Requests, "request"), raw, chat)
		}
	}
}

// CheckText writes a check's findings and its verdict.
func CheckText(w io.Writer, r *check.Result) {
	fmt.Fprintf(w, "%s, %s\n\n", Short(r.Setup), r.Setup.Route)
	for _, s := range r.Sensible {
		if len(s.Problems) > 0 {
			fmt.Fprintf(w, "FAIL sensible output %q: %s\n", s.Prompt, strings.Join(s.Problems, "; "))
		} else {
			fmt.Fprintf(w, "ok   sensible output %q (%d tokens, %s)\n", s.Prompt, s.Tokens, s.Finish)
		}
	}
	if d := r.Determinism; d != nil {
		switch {
		case d.Failed != "":
			fmt.Fprintf(w, "FAIL greedy determinism not judged: %s\n", d.Failed)
		case d.Same:
			fmt.Fprintln(w, "ok   greedy determinism: the same prompt twice at temperature 0 gave the same text")
		default:
			fmt.Fprintf(w, "note greedy determinism: the same prompt twice gave different text from word %d (some engines are not deterministic under batching; not a failure)\n", d.Word)
		}
	}
	if a := r.Accuracy; a != nil {
		verdict := "ok  "
		if !a.Passed {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "%s accuracy %d of %d = %.1f%% (95%% interval %.1f–%.1f%%; the threshold is %.0f%%)", verdict, a.Right, a.Total, 100*a.Share, 100*a.Lo, 100*a.Hi, 100*a.Threshold)
		if a.BuiltIn != nil {
			fmt.Fprintf(w, "; built-in %d/%d", a.BuiltIn.Right, a.BuiltIn.Total)
		}
		if a.Eval != nil {
			fmt.Fprintf(w, "; your eval %d/%d", a.Eval.Right, a.Eval.Total)
		}
		fmt.Fprintln(w)
		for _, x := range a.Wrong {
			fmt.Fprintf(w, "  %q → %q\n", x.Prompt, x.Output)
		}
	}
	checkToolsText(w, r.ToolCalls)
	if a := r.Agreement; a != nil {
		fmt.Fprintf(w, "agreement with --against: %d of %d greedy outputs identical (%.0f%%)", a.Same, a.Total, 100*float64(a.Same)/float64(a.Total))
		if a.FirstDiff != "" {
			fmt.Fprintf(w, "; the first difference is on %q at word %d", a.FirstDiff, a.Word)
		}
		fmt.Fprintln(w)
	}
	if r.Passed {
		fmt.Fprintln(w, "\nverdict: pass")
	} else {
		fmt.Fprintln(w, "\nverdict: FAIL — do not trust this configuration's speed until it answers correctly")
	}
}

// checkToolsText writes the tool-call check's line.
func checkToolsText(w io.Writer, t *check.ToolCalls) {
	switch {
	case t == nil:
	case t.NotJudged != "":
		fmt.Fprintf(w, "note tool calls not judged: %s\n", t.NotJudged)
	case t.Passed():
		var names []string
		for _, c := range t.Calls {
			names = append(names, c.Name)
		}
		fmt.Fprintf(w, "ok   tool calls: %s parse against the tools sent (a sent tool, the required arguments)\n", strings.Join(names, ", "))
	default:
		fmt.Fprintf(w, "FAIL tool calls: %s\n", strings.Join(t.Problems, "; "))
	}
}

// SelftestText writes the self-test's table and how far tokperf stays accurate.
func SelftestText(w io.Writer, s *analyze.Selftest) {
	fmt.Fprintln(w, "| streams | offered tok/s | received tok/s | CPU µs/token | CPU µs/chunk | bare reader µs/chunk | ratio | memory MB | chunks read late | TTFT err | ITL p50 err | aggregate err | errors |")
	fmt.Fprintln(w, "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range s.Levels {
		bare, ratio := "-", "-"
		if r.BareChunks > 0 {
			b := float64(r.BareCPU.Microseconds()) / float64(r.BareChunks)
			bare, ratio = fmt.Sprintf("%.1f", b), fmt.Sprintf("%.2f×", r.PerChunk()/b)
		}
		errCell := func(v float64) string {
			if !r.Compared {
				return "-"
			}
			return fmt.Sprintf("%+.1f%%", 100*v)
		}
		fmt.Fprintf(w, "| %d | %.0f | %.0f | %.1f | %.1f | %s | %s | %.0f | %.1f%% | %s | %s | %s | %d |\n", r.Streams, r.OfferedTokS, r.ReceivedTokS,
			float64(r.CPU.Microseconds())/float64(max(r.Tokens, 1)), r.PerChunk(), bare, ratio, r.RSSMB, 100*r.BufferedShare, errCell(r.TTFTErr), errCell(r.ITLErr), errCell(r.AggErr), r.Errors)
	}
	fmt.Fprintln(w)
	for _, r := range s.Levels {
		if r.SimSteps > 0 && r.SimLateSteps > analyze.SimLateLimit*r.SimSteps {
			fmt.Fprintf(w, "at %d streams the simulator ran %.0f of its %.0f steps late (%.0f%%): it offered less than %.0f tok/s (its truth still says what it sent)\n", r.Streams, r.SimLateSteps, r.SimSteps, 100*r.SimLateSteps/r.SimSteps, r.OfferedTokS)
		}
	}
	if s.AccurateUpTo == 0 {
		fmt.Fprintln(w, "accurate up to 0 streams: even the first level was off by more than 2% (or failed)")
	} else {
		fmt.Fprintf(w, "accurate up to %d streams (TTFT, median ITL and aggregate within 2%% of the simulator's truth, no errors)\n", s.AccurateUpTo)
	}
	if s.EndsBecause != "" {
		fmt.Fprintf(w, "it ends there: %s (measured in this run, on a machine that others may share)\n", s.EndsBecause)
	}
}

// ExperimentText writes what became of each configuration, then compares
// those that passed, level by level, each against the first that passed,
// and names the best at each level.
func ExperimentText(w io.Writer, e *analyze.Experiment) {
	for _, o := range e.Configs {
		status := "ok"
		if !o.OK {
			status = "failed"
		}
		fmt.Fprintf(w, "%s: %s", o.Name, status)
		if o.Reason != "" {
			fmt.Fprintf(w, " (%s)", o.Reason)
		}
		fmt.Fprintf(w, "; stopped in %.1f s", o.StoppedS)
		if o.Released != "" {
			fmt.Fprintf(w, ", %s", o.Released)
		}
		fmt.Fprintf(w, ", log %s\n", o.Log)
		if o.LogTail != "" {
			fmt.Fprintf(w, "last lines of its log:\n  %s\n", strings.ReplaceAll(o.LogTail, "\n", "\n  "))
		}
		for _, l := range experimentConfigLines(e, o) {
			fmt.Fprintln(w, "  "+l)
		}
	}
	fmt.Fprintln(w)
	base := e.Base
	if base == "" {
		base = "the first that passed"
	}
	fmt.Fprintf(w, "== comparison (aggregate tok/s; ratio to %s where significant, ~ where not)\n", base)
	if e.Asked.Interleaved {
		fmt.Fprintf(w, "(%d repeats, the configurations in turn, A B A B, each on a fresh server; repeat i of each paired)\n", e.Asked.Repeat)
	}
	head, sep := "| C |", "|--:|"
	for _, o := range e.Configs {
		head += " " + o.Name + " |"
		sep += "--:|"
	}
	fmt.Fprintln(w, head+" best |")
	fmt.Fprintln(w, sep+"---|")
	var verdicts, nobest, resolves, notJudged []string
	unit := ""
	for _, lv := range e.Levels {
		row := fmt.Sprintf("| %d |", lv.C)
		for _, c := range lv.Cells {
			switch {
			case c.Failed:
				row += " FAILED |"
				continue
			case c.Base:
				row += fmt.Sprintf(" %.1f |", c.AggregateTokS)
			case c.Withheld != "":
				row += fmt.Sprintf(" %.1f (not judged) |", c.AggregateTokS)
			case c.Ratio != nil:
				row += fmt.Sprintf(" %.1f (%.2f×) |", c.AggregateTokS, *c.Ratio)
			default:
				row += fmt.Sprintf(" %.1f (~) |", c.AggregateTokS)
			}
		}
		fmt.Fprintln(w, row+" "+cmp.Or(lv.Best, "-")+" |")
		if lv.Best != "" {
			verdicts = append(verdicts, fmt.Sprintf("C=%d: %s (%.1f tok/s)", lv.C, lv.Best, lv.BestTokS))
		} else if lv.NoBest != "" {
			nobest = append(nobest, fmt.Sprintf("C=%d: %s", lv.C, lv.NoBest))
		}
		for i, c := range lv.Cells {
			if c.Withheld != "" {
				notJudged = append(notJudged, fmt.Sprintf("C=%d %s: %s", lv.C, e.Configs[i].Name, analyze.NotJudged(c.Withheld)))
			}
			notJudged = append(notJudged, energyLines(e.Configs[i].Name+" against "+e.Base, c.Energy)...)
		}
		for _, c := range lv.Cells {
			if c.Resolves != nil && c.Withheld == "" {
				resolves = append(resolves, fmt.Sprintf("%s at C=%d", analyze.Pct(*c.Resolves), lv.C))
				unit = fmt.Sprintf("%d %s a side", c.Units, c.Unit)
				if c.Unit == "repeats" {
					unit = fmt.Sprintf("%d paired repeats", c.Units)
				}
				break
			}
		}
	}
	if len(resolves) > 0 {
		fmt.Fprintf(w, "this comparison resolves %s (%s); ask for more repeats to see less\n", strings.Join(resolves, ", "), unit)
	}
	for _, n := range notJudged {
		fmt.Fprintln(w, n)
	}
	for _, o := range e.Configs {
		if !o.OK {
			fmt.Fprintf(w, "%s: FAILED — %s\n", o.Name, o.Reason)
		}
	}
	speculationAndBest(w, e, verdicts, nobest)
	if v := e.Verdicts; v != nil {
		// The details first, then the answers, one short line each, as
		// the report's last lines.
		fmt.Fprintln(w, "\n== the verdicts in full")
		for _, x := range v.All() {
			fmt.Fprintln(w, x.Line())
		}
		fmt.Fprintf(w, "\n== the %s verdicts\n", number(len(v.All())))
		for _, x := range v.All() {
			fmt.Fprintln(w, x.Short())
		}
	}
}

// speculationAndBest writes where speculative decoding's speed-up went,
// where a configuration differs from the base in using it, then the best
// configuration at each level.
func speculationAndBest(w io.Writer, e *analyze.Experiment, verdicts, nobest []string) {
	for _, x := range e.Speculation {
		Speculation(w, x)
	}
	fmt.Fprintln(w, bestLine(e, verdicts, nobest))
}

// bestLine is the verdict of the comparison: the best configuration at
// each level.
func bestLine(e *analyze.Experiment, verdicts, nobest []string) string {
	switch {
	case len(verdicts) == 0 && e.Passed == 0:
		return "verdict: no configuration passed"
	case len(verdicts) == 0:
		return "verdict: no configuration is significantly the best at any level (" + strings.Join(nobest, "; ") + ")"
	case e.ChecksSkipped:
		return "verdict: the best configuration, by level (correctness checks skipped: none was checked): " + strings.Join(verdicts, "; ")
	case e.CheckMode == "report":
		return "verdict: the best configuration, by level (check mode report: a failed check did not stop a configuration): " + strings.Join(verdicts, "; ")
	}
	return "verdict: the best configuration that passed its checks, by level: " + strings.Join(verdicts, "; ")
}

// experimentConfigLines are what a configuration's loop measured besides
// its sweep: seeds, every repeat's log, a check shown in report mode,
// each workload's headline, the overhead, the soak, the spread across
// repeats, and what went wrong with any of them.
func experimentConfigLines(e *analyze.Experiment, o analyze.ExperimentConfig) []string {
	var out []string
	if len(o.Seeds) > 0 {
		var s []string
		for _, x := range o.Seeds {
			s = append(s, fmt.Sprint(x))
		}
		out = append(out, "seed "+strings.Join(s, ", ")+" (one per repeat; set it with seed: in the sweep)")
	}
	if len(o.Logs) > 1 {
		out = append(out, "logs: "+strings.Join(o.Logs, ", "))
	}
	if o.CheckFailed && o.OK {
		why := ""
		if o.Check != nil {
			why = ": " + strings.Join(o.Check.Failures, "; ")
		}
		out = append(out, "check FAILED (check mode report: measured and compared all the same)"+why)
	}
	for _, wl := range o.Workloads {
		if wl.Run == nil {
			continue
		}
		var lv []string
		for _, st := range wl.Run.Stages {
			if st.Repeat == 0 {
				lv = append(lv, fmt.Sprintf("C=%d %.1f", st.Concurrency, st.AggregateTokS))
			}
		}
		out = append(out, fmt.Sprintf("workload %s: aggregate tok/s %s (%s)", wl.Name, strings.Join(lv, ", "), wl.Result))
		if len(o.Workloads) > 1 && wl.Run != o.Run {
			for _, l := range RepeatLines(wl.Run) {
				out = append(out, "workload "+wl.Name+": "+l)
			}
		}
	}
	if ov := o.Overhead; ov != nil {
		for _, l := range ov.Levels {
			out = append(out, fmt.Sprintf("overhead C=%d: chat − raw TTFT %s ms, TPOT %s ms; %s", l.C, l.TTFT, l.TPOT, l.Reading))
		}
	}
	if st := o.Soak.SoakStage(); st != nil {
		out = append(out, fmt.Sprintf("soak C=%d (%s): %s", st.Concurrency, o.SoakResult, st.Stability.Text))
	}
	if o.Run != nil {
		out = append(out, RepeatLines(o.Run)...)
	}
	for _, p := range o.Problems {
		out = append(out, "problem: "+p)
	}
	return out
}

// virtualNote says, after the profile's name, that a run was in virtual time.
func virtualNote(s record.Setup) string {
	if !s.Virtual {
		return ""
	}
	return ", in virtual time: no network, no client, the profile's own figures"
}

// number is n in words up to ten, as a count is spelt in a heading ("the
// four verdicts"), and in digits past it.
func number(n int) string {
	words := []string{"no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"}
	if n >= 0 && n < len(words) {
		return words[n]
	}
	return strconv.Itoa(n)
}
