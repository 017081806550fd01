package analyze

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tokperf/tokperf/internal/baseline"
	"github.com/tokperf/tokperf/internal/stats"
)

// Verdicts are an experiment's four answers, the seed article's four weak
// assumptions: was the benchmark representative, do the configurations
// differ (does MTP help), is the comparison with the baseline fair, is the
// deployment stable (METRICS.md §12).
type Verdicts struct {
	Representative LoopVerdict `json:"representative"`
	Configurations LoopVerdict `json:"configurations"`
	Fair           LoopVerdict `json:"fair"`
	Stable         LoopVerdict `json:"stable"`
}

// All are the verdicts in the order they are shown; reports count them
// from it.
func (v *Verdicts) All() []*LoopVerdict {
	return []*LoopVerdict{&v.Representative, &v.Configurations, &v.Fair, &v.Stable}
}

// LoopVerdict is one answer: its line with the numbers, the numbers
// themselves, what it rests on, and why it could not be answered or was
// withheld.
type LoopVerdict struct {
	// Question is representative, configurations, fair or stable.
	Question string `json:"question"`
	// Answer is the short answer: yes, no, differ, same, comparable,
	// context only, stable, unstable; "not asked" or "cannot answer"
	// when there is none.
	Answer string `json:"answer"`
	// Text is the one line shown, with its numbers or why not.
	Text string `json:"text"`
	// RestsOn names the stages and runs the verdict used, as
	// CONFIG/sweep, CONFIG/workload NAME, CONFIG/soak, baseline NAME.
	RestsOn []string `json:"rests_on"`
	// Withheld, when set, is why the verdict is not given though its
	// numbers were measured (a stage it rests on cannot be trusted).
	Withheld string          `json:"withheld,omitempty"`
	Figures  []VerdictFigure `json:"figures,omitempty"`
	// Prompts says what the datasets it rests on held (distinct prompts,
	// length quantiles); empty when it rests on none. Text ends with it,
	// and so does the line of a verdict withheld.
	Prompts string `json:"prompts,omitempty"`
}

// Answered says whether the verdict has an answer to show.
func (v *LoopVerdict) Answered() bool {
	return v.Withheld == "" && v.Answer != "not asked" && v.Answer != "cannot answer"
}

// Line is the verdict as shown: its text, or why it is withheld.
func (v *LoopVerdict) Line() string {
	if v.Withheld != "" {
		line := v.Question + ": withheld — " + v.Withheld
		if v.Prompts != "" {
			line += " [" + v.Prompts + "]"
		}
		return line
	}
	return v.Text
}

// Withhold marks the verdict as not given, with the reason.
func (v *LoopVerdict) Withhold(reason string) { v.Withheld = reason }

// VerdictFigure is one number a verdict rests on, with its 95% interval
// where it has one.
type VerdictFigure struct {
	Config      string   `json:"config,omitempty"`
	Workload    string   `json:"workload,omitempty"`
	Against     string   `json:"against,omitempty"` // what a ratio is to
	Concurrency int      `json:"concurrency,omitempty"`
	Name        string   `json:"name"` // aggregate_tok_s, ratio, per_gpu_ratio, pct_per_h …
	Value       float64  `json:"value"`
	Lo          *float64 `json:"lo,omitempty"`
	Hi          *float64 `json:"hi,omitempty"`
	Significant *bool    `json:"significant,omitempty"`
	State       string   `json:"state,omitempty"`
}

// ComputeVerdicts computes the answers from the configurations' outcomes and
// sets e.Verdicts; CompareConfigs must have run.
func (e *Experiment) ComputeVerdicts() *Verdicts {
	v := &Verdicts{
		Representative: e.representative(),
		Configurations: e.configurations(),
		Fair:           e.fair(),
		Stable:         e.stable(),
	}
	for _, x := range v.All() {
		if x.RestsOn == nil {
			x.RestsOn = []string{}
		}
		// A verdict resting on a stage measured invalidly (a starved
		// simulator, a lagging client, too few requests, all failed) is
		// not given (§5, validity gates).
		if x.Withheld == "" {
			if why := e.flawsOf(x.RestsOn); why != "" {
				x.Withhold(NotJudged(why))
			}
		}
		if x.Prompts = e.datasetsOf(x.RestsOn); x.Prompts != "" {
			x.Text += " [" + x.Prompts + "]"
		}
		// A figure with no finite value (a stage with nothing finished)
		// is left out: JSON has no NaN.
		x.Figures = slices.DeleteFunc(x.Figures, func(f VerdictFigure) bool { return finite(f.Value) == nil })
	}
	e.Verdicts = v
	return v
}

// flawsOf is why the runs named by rests (CONFIG/sweep, CONFIG/workload
// NAME, CONFIG/soak) cannot carry a verdict, in one line: the largest
// measured cause, and how many runs more have one; "" when no flaw of
// theirs could change it.
func (e *Experiment) flawsOf(rests []string) string {
	var why []string
	worst, size := "", -1.0
	for _, name := range rests {
		r := e.runOf(name)
		if r == nil {
			continue
		}
		var labels []string
		for _, s := range r.Stages {
			labels = append(labels, Label(s.Stage))
		}
		if b := bounded(flaws(r), labels, within(DefaultTolerance)); !b.Judged() {
			why = append(why, name)
			if b.Size > size {
				worst, size = name+": "+b.Withheld, b.Size
			}
		}
	}
	switch len(why) {
	case 0:
		return ""
	case 1:
		return worst
	}
	return fmt.Sprintf("%s (and %d more: %s)", worst, len(why)-1, strings.Join(slices.DeleteFunc(why, func(n string) bool { return strings.HasPrefix(worst, n+": ") }), ", "))
}

// runOf is the run a name of RestsOn (CONFIG/sweep, CONFIG/workload NAME,
// CONFIG/soak) stands for; nil for a baseline (published figures, not
// measured here) or a run that is not there.
func (e *Experiment) runOf(name string) *Run {
	cfg, part, ok := strings.Cut(name, "/")
	if !ok {
		return nil
	}
	for i := range e.Configs {
		c := &e.Configs[i]
		if c.Name != cfg {
			continue
		}
		switch {
		case part == "sweep":
			return c.Run
		case part == "soak":
			return c.Soak
		case strings.HasPrefix(part, "workload "):
			for _, w := range c.Workloads {
				if w.Name == strings.TrimPrefix(part, "workload ") {
					return w.Run
				}
			}
		}
	}
	return nil
}

// FewPrompts is the number of distinct prompts below which a dataset is
// too small a sample to speak for the traffic it stands for.
const FewPrompts = 100

// datasetsOf says, for each run named by rests whose prompts came from a
// dataset, how many distinct prompts it had and how long they were: a
// verdict resting on a dataset says what it rested on. "" when none did.
func (e *Experiment) datasetsOf(rests []string) string {
	var out []string
	seen := map[string]bool{}
	for _, name := range rests {
		r := e.runOf(name)
		if r == nil || r.Setup.Workload.Input != "dataset" {
			continue
		}
		w := r.Setup.Workload
		_, part, _ := strings.Cut(name, "/")
		text := fmt.Sprintf("%s: %d distinct prompts, prompt lengths %s", strings.TrimPrefix(part, "workload "), w.DistinctPrompts, w.PromptLengths)
		if w.OutputLengths != "" {
			text += ", output lengths " + w.OutputLengths
		}
		if w.Tokenizer == "" {
			text += " (estimated, no tokenizer)"
		}
		if w.DistinctPrompts < FewPrompts {
			text += fmt.Sprintf(": fewer than %d, too few to stand for the traffic", FewPrompts)
		}
		if !seen[text] {
			seen[text] = true
			out = append(out, text)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "dataset " + strings.Join(out, "; ")
}

// passed are the configurations compared.
func (e *Experiment) passed() []*ExperimentConfig {
	var out []*ExperimentConfig
	for i := range e.Configs {
		if c := &e.Configs[i]; c.OK && c.Run != nil {
			out = append(out, c)
		}
	}
	return out
}

func boolp(b bool) *bool { return &b }

// ratioText is "0.71× [0.66, 0.76]" (no interval: "0.71×").
func ratioText(r float64, lo, hi *float64) string {
	if lo == nil || hi == nil {
		return fmt.Sprintf("%.2f×", r)
	}
	return fmt.Sprintf("%.2f× [%.2f, %.2f]", r, *lo, *hi)
}

// representative compares each configuration's workloads at every level
// they share, each against the first; the line quotes the highest shared
// level, the headline.
func (e *Experiment) representative() LoopVerdict {
	v := LoopVerdict{Question: "representative"}
	if len(e.Workloads) < 2 {
		v.Answer, v.Text = "not asked", "representative: not asked — give two workloads (workloads: with two or more named entries)"
		return v
	}
	var parts []string
	differ, answered := false, false
	for _, c := range e.passed() {
		var runs []WorkloadRun
		for _, w := range c.Workloads {
			if w.Run != nil {
				runs = append(runs, w)
			}
		}
		if len(runs) < 2 {
			parts = append(parts, fmt.Sprintf("%s: fewer than two workloads ran", c.Name))
			continue
		}
		base := runs[0]
		v.RestsOn = append(v.RestsOn, c.Name+"/workload "+base.Name)
		var line []string
		for _, w := range runs[1:] {
			v.RestsOn = append(v.RestsOn, c.Name+"/workload "+w.Name)
			top := ""
			keys, byBase := byKey(base.Run)
			_, byW := byKey(w.Run)
			for _, k := range keys {
				if k.Rate > 0 || byW[k] == nil {
					continue
				}
				// Every repeat, paired, as compare does.
				sa, sb := byBase[k][0], byW[k][0]
				m := PairRepeats(byBase[k], byW[k])[0]
				answered = true
				for _, x := range []struct {
					wl string
					st *Stage
					r  *Run
				}{{base.Name, sa, base.Run}, {w.Name, sb, w.Run}} {
					f := VerdictFigure{Config: c.Name, Workload: x.wl, Concurrency: sa.Concurrency, Name: "aggregate_tok_s", Value: x.st.AggregateTokS}
					f.Lo, f.Hi = aggregateCI(x.st)
					if rep := repeatOf(x.r, sa.Concurrency); rep != nil {
						f.Lo, f.Hi = rep.Lo, rep.Hi // the spread across repeats says more
					}
					v.Figures = append(v.Figures, f)
				}
				sig := m.Significant
				v.Figures = append(v.Figures, VerdictFigure{Config: c.Name, Workload: w.Name, Against: base.Name, Concurrency: sa.Concurrency, Name: "ratio",
					Value: m.Ratio, Lo: finite(m.Lo), Hi: finite(m.Hi), Significant: boolp(sig)})
				mark := "not significant"
				if sig {
					mark = "significant"
					differ = true
				}
				top = fmt.Sprintf("C=%d %s %s vs %s %s tok/s = %s, %s", sa.Concurrency, w.Name, aggText(sb), base.Name, aggText(sa), ratioText(m.Ratio, finite(m.Lo), finite(m.Hi)), mark)
			}
			if top == "" {
				top = fmt.Sprintf("%s shares no level with %s", w.Name, base.Name)
			}
			line = append(line, top)
		}
		parts = append(parts, c.Name+": "+strings.Join(line, "; "))
	}
	switch {
	case !answered:
		v.Answer = "cannot answer"
		if len(parts) == 0 {
			parts = append(parts, "no configuration passed")
		}
		v.Text = "representative: cannot answer — " + strings.Join(parts, "; ")
	case differ:
		v.Answer = "differ"
		v.Text = "representative: the headline moves with the workload — " + strings.Join(parts, "; ")
	case unresolved(v.Figures) != "":
		// No difference found, but none this small could have been: the
		// stages were too short to say the workloads agree.
		v.Answer = "cannot answer"
		v.Text = "representative: cannot tell — " + unresolved(v.Figures) + "; run longer stages (max_stage_time, requests) or repeats: " + strings.Join(parts, "; ")
	default:
		v.Answer = "same"
		v.Text = "representative: no significant difference between the workloads — " + strings.Join(parts, "; ")
	}
	return v
}

// Unresolved is the widest a ratio's interval may be (its half width, in
// ratio) for "no significant difference" to mean the two agree.
const Unresolved = 0.25

// unresolved says which ratio among figs could not have resolved a
// difference of Unresolved ("C=32 resolves only ±1200%"); "" when each
// could.
func unresolved(figs []VerdictFigure) string {
	worst, at := 0.0, 0
	for _, f := range figs {
		if f.Name != "ratio" {
			continue
		}
		half := math.Inf(1)
		if f.Lo != nil && f.Hi != nil && *f.Lo > 0 {
			half = math.Sqrt(*f.Hi / *f.Lo) - 1
		}
		if half > worst {
			worst, at = half, f.Concurrency
		}
	}
	switch {
	case worst <= Unresolved:
		return ""
	case math.IsInf(worst, 1):
		return fmt.Sprintf("C=%d had too few requests for an interval", at)
	}
	return fmt.Sprintf("C=%d resolves only %s", at, Pct(worst))
}

// aggregateCI is a 95% interval of a stage's aggregate tok/s from its
// time blocks (Student's t on the logarithms of their throughputs, as an
// A/B's: METRICS.md, "Error model"), centred on the measured aggregate.
// Nil where the stage has too few requests for blocks.
func aggregateCI(s *Stage) (lo, hi *float64) {
	logs := logsOf(abFigures[0], blocking.blocks(s))
	if len(logs) < minBlocks || !(s.AggregateTokS > 0) {
		return nil, nil
	}
	_, half, _ := stats.MeanCI(logs)
	return finite(s.AggregateTokS * math.Exp(-half)), finite(s.AggregateTokS * math.Exp(half))
}

// aggText is a stage's aggregate with its interval: "1452.4 [1401.2, 1503.9]".
func aggText(s *Stage) string {
	lo, hi := aggregateCI(s)
	if lo == nil || hi == nil {
		return fmt.Sprintf("%.1f", s.AggregateTokS)
	}
	return fmt.Sprintf("%.1f [%.1f, %.1f]", s.AggregateTokS, *lo, *hi)
}

// repeatOf is the aggregate's figure across repeats at level c, if the
// run was repeated.
func repeatOf(r *Run, c int) *RepeatFigure {
	for i := range r.Repeats {
		if r.Repeats[i].Concurrency == c && r.Repeats[i].Rate == 0 {
			return r.Repeats[i].Figure("aggregate_tok_s")
		}
	}
	return nil
}

// configurations is each configuration against the base, level by level:
// the ratio with its interval, and where a significant gain turns into a
// significant loss.
func (e *Experiment) configurations() LoopVerdict {
	v := LoopVerdict{Question: "configurations"}
	passed := e.passed()
	switch {
	case len(e.Configs) < 2:
		v.Answer, v.Text = "not asked", "configurations: not asked — give two configurations"
		return v
	case len(passed) < 2:
		v.Answer = "cannot answer"
		v.Text = fmt.Sprintf("configurations: cannot answer — %d of %d configurations passed; two are needed to compare", len(passed), len(e.Configs))
		return v
	}
	for _, c := range passed {
		v.RestsOn = append(v.RestsOn, c.Name+"/sweep")
	}
	var parts []string
	anySig := false
	for i, cfg := range e.Configs {
		if !cfg.OK || cfg.Run == nil || cfg.Name == e.Base {
			continue
		}
		var cells []string
		gainAt, lossAt := 0, 0
		for _, lv := range e.Levels {
			if i >= len(lv.Cells) || lv.Cells[i].Of == nil {
				continue
			}
			cell := lv.Cells[i]
			v.Figures = append(v.Figures, VerdictFigure{Config: cfg.Name, Against: e.Base, Concurrency: lv.C, Name: "ratio", Value: *cell.Of, Lo: cell.Lo, Hi: cell.Hi, Significant: boolp(cell.Significant)})
			s := fmt.Sprintf("C=%d %s", lv.C, ratioText(*cell.Of, cell.Lo, cell.Hi))
			switch {
			case cell.Withheld != "":
				s += " (not judged)"
			case !cell.Significant:
				s += " (not significant)"
			default:
				anySig = true
				switch {
				case *cell.Of > 1 && gainAt == 0:
					gainAt = lv.C
				case *cell.Of < 1 && lossAt == 0:
					lossAt = lv.C
				}
			}
			cells = append(cells, s)
		}
		where := "no significant difference at any level"
		switch {
		case gainAt > 0 && lossAt > gainAt:
			where = fmt.Sprintf("the gain turns into a loss at C=%d", lossAt)
		case gainAt > 0 && lossAt > 0:
			where = fmt.Sprintf("a loss at C=%d, a gain at C=%d", lossAt, gainAt)
		case gainAt > 0:
			where = "a gain, never a significant loss"
		case lossAt > 0:
			where = "a loss, never a significant gain"
		}
		if r := e.resolves(i); r != "" {
			where += "; " + r
		}
		parts = append(parts, fmt.Sprintf("%s / %s aggregate tok/s: %s; %s", cfg.Name, e.Base, strings.Join(cells, ", "), where))
	}
	v.Answer = "same"
	if anySig {
		v.Answer = "differ"
	}
	v.Text = "configurations: " + strings.Join(parts, " | ")
	return v
}

// resolves says what configuration i's comparison with the base could
// resolve, level by level: "resolves ±1.2% at C=1, ±3.4% at C=8 (3 paired
// repeats)"; "" where no level has an interval.
func (e *Experiment) resolves(i int) string {
	var parts []string
	unit := ""
	for _, lv := range e.Levels {
		if i >= len(lv.Cells) || lv.Cells[i].Resolves == nil {
			continue
		}
		c := lv.Cells[i]
		parts = append(parts, fmt.Sprintf("%s at C=%d", Pct(*c.Resolves), lv.C))
		unit = fmt.Sprintf("%d %s", c.Units, c.Unit)
		if c.Unit == "repeats" {
			unit = fmt.Sprintf("%d paired repeats", c.Units)
		} else {
			unit += " a side"
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "resolves " + strings.Join(parts, ", ") + " (" + unit + ")"
}

// fair is each configuration against the file's baseline: the arithmetic
// at the highest shared level, per GPU where the counts differ, whether
// model and workload match, and the fairness verdict.
func (e *Experiment) fair() LoopVerdict {
	v := LoopVerdict{Question: "fair"}
	if e.Asked.Baseline == "" {
		v.Answer, v.Text = "not asked", "fair: not asked — give baseline: (a published baseline's name, or another tool's result file)"
		return v
	}
	var parts []string
	comparable, answered := true, false
	for _, c := range e.passed() {
		b := c.Baseline
		if b == nil {
			continue
		}
		answered = true
		v.RestsOn = append(v.RestsOn, c.Name+"/sweep", "baseline "+e.Asked.Baseline)
		same := map[string]string{}
		for _, f := range b.Fields {
			same[f.Name] = f.Verdict
		}
		workload := "same"
		for _, n := range []string{"input tokens", "output tokens"} {
			if same[n] != "same" {
				workload = same[n]
			}
		}
		arith := "no level shared with the baseline"
		if len(b.Ratios) > 0 {
			r := b.Ratios[len(b.Ratios)-1]
			// Rounded as the claim's arithmetic is (Claim), so one figure
			// never reads 343.2 in one place and 343.3 in another.
			f1 := func(x float64) float64 { return math.Round(x*10) / 10 }
			arith = fmt.Sprintf("C=%d %.1f / %.1f = %.2f× aggregate", r.C, f1(r.Run), f1(r.Base), r.Ratio)
			v.Figures = append(v.Figures, VerdictFigure{Config: c.Name, Against: e.Asked.Baseline, Concurrency: r.C, Name: "ratio", Value: r.Ratio})
			if r.PerGPU {
				arith += fmt.Sprintf(", %.1f / %.1f = %.2f× per GPU", f1(r.RunGPU), f1(r.BaseGPU), r.GPURatio)
				v.Figures = append(v.Figures, VerdictFigure{Config: c.Name, Against: e.Asked.Baseline, Concurrency: r.C, Name: "per_gpu_ratio", Value: r.GPURatio})
			}
		}
		if b.Verdict != "comparable" {
			comparable = false
		}
		line := fmt.Sprintf("%s vs %s: %s; same model? %s; same workload? %s; %s", c.Name, e.Asked.Baseline, arith, same["model"], workload, b.Verdict)
		if b.Claim != "" {
			// The claim's line carries the same arithmetic: it replaces it.
			line = fmt.Sprintf("%s vs %s: %s; same model? %s; same workload? %s; %s", c.Name, e.Asked.Baseline, b.Claim, same["model"], workload, b.Verdict)
		}
		parts = append(parts, line)
	}
	switch {
	case !answered:
		v.Answer = "cannot answer"
		v.Text = "fair: cannot answer — no configuration that passed was compared with " + e.Asked.Baseline
	case comparable:
		v.Answer = "comparable"
		v.Text = "fair: comparable — " + strings.Join(parts, " | ")
	default:
		v.Answer = "context only"
		v.Text = "fair: not a like-for-like comparison — " + strings.Join(parts, " | ")
	}
	return v
}

// stable is each configuration's soak verdict: drift, change point,
// memory growth, or why there is none.
func (e *Experiment) stable() LoopVerdict {
	v := LoopVerdict{Question: "stable"}
	if !e.Asked.Soak {
		v.Answer, v.Text = "not asked", "stable: not measured — give soak: (duration and slice)"
		return v
	}
	var parts []string
	answered, allStable, unjudged := false, true, false
	for _, c := range e.Configs {
		st := c.Soak.SoakStage()
		if st == nil {
			if c.Soak != nil || c.OK {
				parts = append(parts, c.Name+": not measured (the soak did not run)")
			}
			continue
		}
		answered = true
		v.RestsOn = append(v.RestsOn, c.Name+"/soak")
		sv := st.Stability
		for _, f := range sv.Figures {
			name, val := "pct_per_h", f.PctPerH
			lo, hi := f.PctPerHLo, f.PctPerHHi
			if f.Unit == "bytes" {
				name, val, lo, hi = "per_h", f.PerH, f.PerHLo, f.PerHHi
			}
			v.Figures = append(v.Figures, VerdictFigure{Config: c.Name, Concurrency: st.Concurrency, Name: f.Field + "." + name, Value: val, Lo: finite(lo), Hi: finite(hi), State: f.State})
		}
		switch sv.Kind {
		case "stable":
		case "too_short", "not_judged":
			unjudged = true // neither stable nor not: the soak cannot say
		default:
			allStable = false
		}
		parts = append(parts, c.Name+" "+sv.Text)
	}
	switch {
	case !answered:
		v.Answer = "cannot answer"
		v.Text = "stable: not measured — " + strings.Join(parts, "; ")
	case allStable && unjudged:
		v.Answer = "cannot answer"
		v.Text = "stable: not judged — " + strings.Join(parts, " | ")
	case allStable:
		v.Answer = "stable"
		v.Text = "stable: " + strings.Join(parts, " | ")
	default:
		v.Answer = "unstable"
		v.Text = "stable: not every configuration is stable — " + strings.Join(parts, " | ")
	}
	return v
}

// SoakStage is the sliced stage of a soak run, nil when none was judged
// (or r is nil).
func (r *Run) SoakStage() *Stage {
	if r == nil {
		return nil
	}
	for i := range r.Stages {
		if r.Stages[i].Stability != nil {
			return &r.Stages[i]
		}
	}
	return nil
}

// BaselineOfRun makes another tool's run (or a tokperf one) a baseline to
// compare with: its closed-loop levels' aggregate tok/s and what its setup
// knows of model, GPUs, engine and workload.
func BaselineOfRun(name string, r *Run) *baseline.Baseline {
	s := r.Setup
	b := &baseline.Baseline{Name: name, Source: "the result file " + name, Model: s.Model, GPU: s.GPU, GPUs: s.GPUs, Engine: s.Server.Engine,
		InputTokens: s.Workload.InputTokens, OutputTokens: s.Workload.OutputTokens}
	if r.Source != nil {
		b.Source = r.Source.Tool + " result file " + name
	}
	for _, st := range r.Stages {
		if st.Rate == 0 && st.Concurrency > 0 && st.Repeat == 0 && st.OK > 0 {
			b.Points = append(b.Points, baseline.Point{Concurrency: st.Concurrency, AggregateTokS: st.AggregateTokS})
		}
	}
	return b
}
