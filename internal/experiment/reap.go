package experiment

import (
	"os"
	"sync"
)

// groups are the process groups started here and not yet ended (leader
// pid → its process): what Reap ends when tokperf itself ends.
var groups sync.Map

// Track records a started process group, for Reap; Untrack forgets it
// once it ended.
func Track(p *os.Process) { groups.Store(p.Pid, p) }

// Untrack forgets a process group that ended.
func Untrack(p *os.Process) { groups.Delete(p.Pid) }

// Reap ends every process group still running, and on Linux every process
// that a server left behind and tokperf adopted (a server that daemonised
// leaves its group; Adopt makes tokperf its parent instead of init). main
// calls it on every way out it sees: a return, a signal, a panic; the
// kernel's parent-death signal covers the rest (kill -9, a crash).
func Reap() {
	groups.Range(func(_, v any) bool {
		SignalGroup(v.(*os.Process), true)
		return true
	})
	killAdopted()
}
