package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
)

// completionCmd is tokperf completion SHELL: a completion script for the
// commands and every command's flags, generated from the flags themselves.
func completionCmd(ctx context.Context, cmd string, args []string, e *env) error {
	if len(args) != 1 || args[0] == "--help" || args[0] == "-h" {
		if len(args) == 1 {
			newFlags(cmd).help(e.stdout)
			return errHelp
		}
		return usagef("want tokperf completion bash, zsh or fish")
	}
	flags := map[string][]string{}
	var cmds []string
	for name, run := range commandTable {
		cmds = append(cmds, name)
		if name == "completion" {
			continue
		}
		var out bytes.Buffer
		sub := &env{stdout: &out, stderr: io.Discard, bench: e.bench, listFlags: true}
		_ = run(ctx, name, []string{"--help"}, sub)
		flags[name] = strings.Fields(out.String())
	}
	cmds = append(cmds, "help", "version")
	slices.Sort(cmds)
	switch args[0] {
	case "bash":
		writeBash(e.stdout, cmds, flags)
	case "zsh":
		fmt.Fprintln(e.stdout, "#compdef tokperf\nautoload -U +X bashcompinit && bashcompinit")
		writeBash(e.stdout, cmds, flags)
	case "fish":
		writeFish(e.stdout, cmds, flags)
	default:
		return usagef("completion %q: want bash, zsh or fish", args[0])
	}
	return nil
}

func writeBash(w io.Writer, cmds []string, flags map[string][]string) {
	fmt.Fprintf(w, `# tokperf completion for bash (and zsh through bashcompinit)
_tokperf() {
    local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]}
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W %q -- "$cur"))
        return
    fi
    local flags=""
    case "$cmd" in
`, strings.Join(cmds, " "))
	for _, c := range slices.Sorted(func(yield func(string) bool) {
		for k := range flags {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(w, "        %s) flags=%q ;;\n", c, strings.Join(flags[c], " "))
	}
	fmt.Fprintf(w, `        help) COMPREPLY=($(compgen -W %q -- "$cur")); return ;;
    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -F _tokperf tokperf
`, strings.Join(cmds, " "))
}

func writeFish(w io.Writer, cmds []string, flags map[string][]string) {
	fmt.Fprintln(w, "# tokperf completion for fish")
	fmt.Fprintf(w, "complete -c tokperf -f -n '__fish_use_subcommand' -a '%s'\n", strings.Join(cmds, " "))
	for _, c := range cmds {
		for _, f := range flags[c] {
			if name, ok := strings.CutPrefix(f, "--"); ok {
				fmt.Fprintf(w, "complete -c tokperf -n '__fish_seen_subcommand_from %s' -l %s\n", c, name)
			} else {
				fmt.Fprintf(w, "complete -c tokperf -n '__fish_seen_subcommand_from %s' -s %s\n", c, strings.TrimPrefix(f, "-"))
			}
		}
	}
}
