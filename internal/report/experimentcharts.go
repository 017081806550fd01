package report

import (
	"fmt"
	"math"

	"github.com/tokperf/tokperf/internal/analyze"
)

// experimentCharts are an experiment's charts beyond its sweeps': each
// configuration's workloads side by side, what the chat API adds (the
// overhead), and each soak's slices over time.
func experimentCharts(e *analyze.Experiment) []*chart {
	var out []*chart
	for _, c := range []*chart{workloadsChart(e), overheadChart(e), soakChart(e)} {
		if c != nil && points(c) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// workloadsChart is aggregate tok/s against concurrency for every
// configuration and workload (the representative question), where a
// configuration ran two workloads or more.
func workloadsChart(e *analyze.Experiment) *chart {
	c := &chart{Name: "workloads", Title: "Aggregate output tok/s of each workload", XLabel: "concurrency (requests in flight, log scale)", XLog: true, YLabel: "aggregate output tok/s", YZero: true}
	k := 0
	for ci, o := range e.Configs {
		if len(o.Workloads) < 2 {
			continue
		}
		for wi, w := range o.Workloads {
			if w.Run == nil {
				continue
			}
			se := series{Name: o.Name + " · " + w.Name, Color: hue(ci), Line: true, Markers: true, Marker: markerOf(wi), Dash: []string{"", "5 4", "2 3"}[wi%3]}
			for _, st := range w.Run.Stages {
				if st.Repeat != 0 || st.Rate > 0 {
					continue
				}
				se.Points = append(se.Points, point{X: float64(st.Concurrency), Y: st.AggregateTokS,
					Tip: fmt.Sprintf("%s, workload %s, C=%d: %s tok/s aggregate", o.Name, w.Name, st.Concurrency, f1(st.AggregateTokS))})
			}
			if apart(se.Points) {
				se.Line, c.Note = false, apartNote
			}
			c.Series = append(c.Series, se)
			k++
		}
	}
	if k == 0 {
		return nil
	}
	return c
}

// overheadChart is the TTFT the chat API adds to the raw endpoint's, at
// each level, for every configuration that measured it.
func overheadChart(e *analyze.Experiment) *chart {
	c := &chart{Name: "overhead", Title: "What the chat API adds to TTFT (chat − raw)", XLabel: "concurrency (requests in flight, log scale)", XLog: true, YLabel: "TTFT chat − raw (ms)", YZero: true}
	for ci, o := range e.Configs {
		if o.Overhead == nil {
			continue
		}
		se := series{Name: o.Name, Color: hue(ci), Line: true, Markers: true, Marker: markerOf(ci)}
		for _, l := range o.Overhead.Levels {
			if math.IsNaN(l.TTFT.Value) {
				continue
			}
			se.Points = append(se.Points, point{X: float64(l.C), Y: l.TTFT.Value,
				Tip: fmt.Sprintf("%s, C=%d: chat adds %s ± %s ms to TTFT", o.Name, l.C, num(l.TTFT.Value, 1), num(l.TTFT.HalfWidth, 1))})
		}
		if apart(se.Points) {
			se.Line, c.Note = false, apartNote
		}
		c.Series = append(c.Series, se)
	}
	if len(c.Series) == 0 {
		return nil
	}
	return c
}

// soakChart is each configuration's soak, aggregate tok/s slice by slice
// over its time.
func soakChart(e *analyze.Experiment) *chart {
	c := &chart{Name: "soak", Title: "Soak: aggregate output tok/s over time, slice by slice", XLabel: "time since the soak's start (s)", YLabel: "aggregate output tok/s", YZero: true}
	for ci, o := range e.Configs {
		if o.Soak == nil {
			continue
		}
		se := series{Name: o.Name, Color: hue(ci), Line: true, Markers: true, Marker: markerOf(ci)}
		for _, st := range o.Soak.Stages {
			for _, sl := range st.Slices {
				mid := (sl.From+sl.To).Seconds()/2 - st.Slices[0].From.Seconds()
				se.Points = append(se.Points, point{X: mid, Y: sl.AggregateTokS,
					Tip: fmt.Sprintf("%s, slice %d: %s tok/s aggregate", o.Name, sl.Index, f1(sl.AggregateTokS))})
			}
		}
		c.Series = append(c.Series, se)
	}
	if len(c.Series) == 0 {
		return nil
	}
	c.Note = "Each point is one slice's aggregate, at its middle; the stability verdict reads their trend."
	return c
}
