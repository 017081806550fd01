package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tokperf/tokperf/internal/report"
)

// A page (--format html or png) is never written to a terminal, where it
// would be a screenful of markup or binary: with stdout on a terminal and
// no -o, it goes to a file next to the result file it comes from
// (tokperf-results/X.jsonl → tokperf-results/X.html), and stderr says
// where. A command with no result file to sit beside refuses, naming the
// flag or redirection to use.

// page says whether format is a page rather than text.
func page(format string) bool { return format == "html" || format == "png" }

// pageBeside is the path of format's page next to the result file from:
// its name with the extension replaced, and suffix before it.
func pageBeside(from, suffix, format string) string {
	return strings.TrimSuffix(from, filepath.Ext(from)) + suffix + "." + format
}

// pageOnTerminal is the error of a page with nowhere to go but the terminal.
func pageOnTerminal(cmd, format string) error {
	return usagef("--format %s writes a page, not text for a terminal: redirect it (tokperf %s … --format %s > report.%s)", format, cmd, format, format)
}

// saidPage tells the user where a page went instead of the terminal.
func (e *env) saidPage(path, format string) {
	fmt.Fprintf(e.stderr, "report: %s (--format %s is a page, so it is written to a file, not to the terminal; -o FILE or > FILE chooses where)\n", path, format)
}

// pageTo writes result's page to path, new or not there before, then the
// text report to the terminal, and says where the page went.
func (e *env) pageTo(path, format string, result any) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s exists already: not replaced (-o FILE or > FILE writes the page elsewhere)", path)
	}
	var b bytes.Buffer
	if err := report.Render(&b, format, result); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return err
	}
	if err := report.Render(e.stdout, "text", result); err != nil {
		return err
	}
	e.saidPage(path, format)
	return nil
}
