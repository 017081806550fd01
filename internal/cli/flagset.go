package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// flagSet is one command's flags, GNU style (--url, -c), in groups by
// purpose for the help.
type flagSet struct {
	*pflag.FlagSet
	groups []flagGroup
	// headersNotKept are the names of headers a result file had, whose
	// values it did not keep (config print --from).
	headersNotKept []string
}

// flagGroup is a titled run of flags, in the order they were defined.
type flagGroup struct {
	title string
	from  int // the number of flags defined before the group began
}

func newFlags(cmd string) *flagSet {
	fs := &flagSet{FlagSet: pflag.NewFlagSet(cmd, pflag.ContinueOnError)}
	fs.SortFlags = false
	fs.SetNormalizeFunc(peerAlias)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// group starts a titled group: the flags defined next belong to it.
func (fs *flagSet) group(title string) {
	n := 0
	fs.VisitAll(func(*pflag.Flag) { n++ })
	fs.groups = append(fs.groups, flagGroup{title: title, from: n})
}

// help writes the command's usage, summary, grouped flags and examples.
func (fs *flagSet) help(w io.Writer) {
	h := commandHelp[fs.Name()]
	if fs.Name() == "experiment" {
		h.summary += experimentKeysHelp() // built when asked: it registers every command's flags
	}
	fmt.Fprintf(w, "Usage: tokperf %s\n\n%s\n", h.usage, strings.TrimSpace(h.summary))
	var all []*pflag.Flag
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			all = append(all, f)
		}
	})
	groups := fs.groups
	if len(groups) == 0 || groups[0].from > 0 {
		groups = append([]flagGroup{{title: "Flags"}}, groups...)
	}
	for i, g := range groups {
		end := len(all)
		if i+1 < len(groups) {
			end = groups[i+1].from
		}
		part := pflag.NewFlagSet(fs.Name(), pflag.ContinueOnError)
		part.SortFlags = false
		for _, f := range all[min(g.from, len(all)):min(end, len(all))] {
			part.AddFlag(f)
		}
		if part.HasFlags() {
			fmt.Fprintf(w, "\n%s:\n%s", g.title, part.FlagUsagesWrapped(100))
		}
	}
	if h.examples != "" {
		fmt.Fprintf(w, "\nExamples:\n%s\n", strings.TrimRight(h.examples, "\n"))
	}
}

// names are the command's flags as typed: --name, and -x for a shorthand.
func (fs *flagSet) names() []string {
	var out []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		out = append(out, "--"+f.Name)
		if f.Shorthand != "" {
			out = append(out, "-"+f.Shorthand)
		}
	})
	return out
}

// parse parses args, flags and positionals mixed, and returns the
// positionals; --help shows the help (errHelp).
func (fs *flagSet) parse(args []string, e *env) ([]string, error) {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, pflag.ErrHelp):
		if e.listFlags {
			fmt.Fprintln(e.stdout, strings.Join(fs.names(), " "))
		} else {
			fs.help(e.stdout)
		}
		return nil, errHelp
	case err != nil:
		return nil, flagError(fs, args, err)
	case e.parseOnly:
		return nil, errParsed
	}
	return fs.Args(), nil
}

// errParsed ends a command whose flags parsed, in env.parseOnly.
var errParsed = errors.New("parsed")

// parse parses a command that takes no positional arguments.
func parse(fs *flagSet, args []string, e *env) error {
	pos, err := fs.parse(args, e)
	if err != nil || len(pos) == 0 {
		return err
	}
	for i, a := range args {
		if a == pos[0] && i > 0 {
			if f := fs.Lookup(strings.TrimLeft(args[i-1], "-")); f != nil && f.NoOptDefVal != "" {
				return usagef("unexpected argument %q: give the value of --%s with =, as --%s=%s", a, f.Name, f.Name, a)
			}
		}
	}
	return usagef("unexpected argument %q (flags start with --, e.g. --url)", pos[0])
}

// parseMixed parses flags that may come after positional arguments
// ("compare run.jsonl --baseline x") and returns the positionals.
func parseMixed(fs *flagSet, args []string, e *env) ([]string, error) {
	return fs.parse(args, e)
}

// flagError says which flag was meant, or what a bad value must look like.
func flagError(fs *flagSet, args []string, err error) error {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	var ne *pflag.NotExistError
	var ve *pflag.InvalidValueError
	var re *pflag.ValueRequiredError
	switch {
	case errors.As(err, &ne) && ne.GetSpecifiedShortnames() != "":
		// -url: a long name with one dash reads as the shorthands u, r, l.
		word := ne.GetSpecifiedShortnames()
		name, _, _ := strings.Cut(word, "=")
		if slices.Contains(names, name) && len(name) > 1 {
			return usagef("-%s: long flags take two dashes: --%s", word, word)
		}
		if near := closest(name, names); near != "" && len(name) > 1 {
			return usagef("unknown flag -%s: did you mean --%s?", word, near)
		}
		return usagef("unknown flag -%s (tokperf help %s lists them)", word, fs.Name())
	case errors.As(err, &ne):
		name := ne.GetSpecifiedName()
		if hint := peerHint(fs, name); hint != "" {
			return usagef("unknown flag --%s: %s", name, hint)
		}
		if near := closest(name, names); near != "" {
			return usagef("unknown flag --%s: did you mean --%s?", name, near)
		}
		return usagef("unknown flag --%s (tokperf help %s lists them)", name, fs.Name())
	case errors.As(err, &ve):
		f := ve.GetFlag()
		return usagef("--%s %q: %s", f.Name, ve.GetValue(), valueWant(f, errors.Unwrap(ve)))
	case errors.As(err, &re):
		f := re.GetFlag()
		return usagef("--%s needs a value: %s", f.Name, valueWant(f, nil))
	}
	return usagef("%v", err)
}

// valueWant says what a flag's value must look like.
func valueWant(f *pflag.Flag, why error) string {
	switch f.Value.Type() {
	case "duration":
		return "want a duration such as 30s, 5m or 1h30m"
	case "int", "int64":
		return "want a whole number"
	case "float64":
		return "want a number"
	case "bool":
		return "want true or false"
	}
	if why != nil {
		return why.Error()
	}
	return "want a " + f.Value.Type()
}

// closest is the name within two edits of s, or "".
func closest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := edits(s, n); d < bestD && d < max(len(s), 2) {
			best, bestD = n, d
		}
	}
	return best
}

// edits is the Levenshtein distance of a and b.
func edits(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
