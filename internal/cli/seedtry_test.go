package cli

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
	"github.com/tokperf/tokperf/internal/summary"
)

func TestSeedSearch(t *testing.T) {
	if os.Getenv("SEEDSEARCH") == "" {
		t.Skip()
	}
	base, _ := os.ReadFile("../sim/profiles/seed.yaml")
	want := [][4]float64{{172.2, 176.2, 4000, 23.2}, {542.2, 159.4, 7245, 13.4}, {1646.7, 120.3, 29567, 18.0}, {2156.4, 81.2, 52337, 24.3}}
	for seed := 1; seed <= 40; seed++ {
		dir := t.TempDir()
		p := strings.Replace(string(base), "seed: 1", fmt.Sprintf("seed: %d", seed), 1)
		os.WriteFile(dir+"/p.yaml", []byte(p), 0o644)
		_, _, code := runVirtual(t, "sweep", "--sim-profile", dir+"/p.yaml", "-c", "1,4,16,32", "--ignore-eos=false", "-o", dir+"/r.jsonl")
		if code != 0 {
			t.Fatal(code)
		}
		_, recs, _, _ := results.ReadAll(dir + "/r.jsonl")
		by := map[int][]record.Record{}
		for _, r := range recs {
			by[r.Stage] = append(by[r.Stage], r)
		}
		worst := 0.0
		line := ""
		for i, c := range []int{1, 4, 16, 32} {
			s := summary.Of(by[i], c)
			got := [4]float64{s.AggregateTokS, s.DecodeTokS.Mean, float64(s.OutputTokens), s.WallS}
			for k := range 4 {
				e := got[k]/want[i][k] - 1
				worst = math.Max(worst, math.Abs(e))
				line += fmt.Sprintf(" %+.0f", 100*e)
			}
			line += " |"
		}
		fmt.Printf("seed %2d worst %.1f%%: %s\n", seed, 100*worst, line)
	}
}
