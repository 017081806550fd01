package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/tokenizer"
)

// simCmd is tokperf sim: the simulated server on its own.
func simCmd(ctx context.Context, cmd string, args []string, e *env) error {
	fs := newFlags(cmd)
	profile := fs.String("profile", "seed", "profile: a built-in name or a .yaml file")
	addr := fs.String("addr", "127.0.0.1:0", "listen address (port 0: any free port)")
	list := fs.Bool("list-profiles", false, "list the built-in profiles and exit")
	tokSpec := fs.String("tokenizer", "", "count in this tokenizer's tokens, as the served model would (prompts, the prefix cache, /tokenize): o200k_base, cl100k_base, a tokenizer.json or a model directory (default: words)")
	traceLimit := fs.Int("trace-limit", 10000, "finished requests the ground-truth trace keeps (the most recent; memory stays flat in a long run)")
	if err := parse(fs, args, e); err != nil {
		return err
	}
	if *traceLimit < 1 {
		return usagef("--trace-limit %d: want 1 or more", *traceLimit)
	}
	if *list {
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tENGINE\tGPUS\tDESCRIPTION")
		for _, p := range sim.Profiles() {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", p.Name, p.Engine, p.GPUs, p.Description)
		}
		tw.Flush()
		fmt.Fprintln(e.stdout, "aliases: seed, seed-mtp, llama-3.1-8b-h100")
		return nil
	}
	p, err := sim.LoadProfile(*profile)
	if err != nil {
		return err
	}
	var tok interface{ Count(string) int }
	if *tokSpec != "" {
		t, err := tokenizer.Load(*tokSpec)
		if err != nil {
			return fmt.Errorf("--tokenizer: %w", err)
		}
		tok = t
	}
	return bench.Serve(ctx, p, *addr, *traceLimit, tok, &e.bench, func(url string) {
		fmt.Fprintln(e.stdout, url)
		fmt.Fprintf(e.stderr, "simulating %s (%s, %s); ground truth at /sim/trace; Ctrl-C stops\n", p.Name, p.Engine, p.Description)
	})
}
