// Package host reads what the client's machine did to tokperf's own
// process that neither the client nor the embedded simulator controls:
// how long its threads waited for a CPU (/proc/self/task/*/schedstat),
// the machine's CPU pressure (/proc/pressure/cpu) and the CPU time a
// hypervisor stole (/proc/stat). Where a file is missing (not Linux, an
// old kernel, a container without PSI) that reading is not taken, and the
// result says so rather than reading zero.
//
//	a := host.Read()
//	…
//	h := host.Between(a, host.Read()) // a record.Host, Known naming what was read
package host

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"

	"github.com/tokperf/tokperf/internal/record"
)

// Snapshot is the cumulative counters at one moment.
type Snapshot struct {
	RunNs, WaitNs int64 // tokperf's threads: on a CPU, and runnable waiting for one
	PressureUs    int64 // the machine: some task waited for a CPU
	Steal, Total  int64 // the machine: stolen and all CPU ticks
	sched, psi    bool
	stat          bool
}

// root is where /proc is read; tests point it at a fixture tree.
var root = "/proc"

// Read takes a snapshot; each reading it cannot take is left out.
func Read() Snapshot {
	var s Snapshot
	s.RunNs, s.WaitNs, s.sched = schedstat(filepath.Join(root, "self", "task"))
	s.PressureUs, s.psi = pressure(filepath.Join(root, "pressure", "cpu"))
	s.Steal, s.Total, s.stat = steal(filepath.Join(root, "stat"))
	return s
}

// Between is what happened from a to b, as a record.Host without its
// stage and window, which the caller knows.
func Between(a, b Snapshot) record.Host {
	var h record.Host
	if a.sched && b.sched {
		// A thread that exited between the two takes its counts with it:
		// never a negative wait.
		h.CPURunS = max(0, float64(b.RunNs-a.RunNs)/1e9)
		h.CPUWaitS = max(0, float64(b.WaitNs-a.WaitNs)/1e9)
		h.Known = append(h.Known, "schedstat")
	}
	if a.psi && b.psi {
		h.PressureS = max(0, float64(b.PressureUs-a.PressureUs)/1e6)
		h.Known = append(h.Known, "pressure")
	}
	if a.stat && b.stat {
		if d := b.Total - a.Total; d > 0 {
			h.Steal = max(0, float64(b.Steal-a.Steal)/float64(d))
		}
		h.Known = append(h.Known, "stat")
	}
	return h
}

// schedstat sums the first two fields (ns on a CPU, ns waiting on a run
// queue) of every thread's schedstat under dir.
func schedstat(dir string) (run, wait int64, ok bool) {
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, false
	}
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			continue // the thread exited
		}
		f := bytes.Fields(b)
		if len(f) < 2 {
			continue
		}
		r, err1 := strconv.ParseInt(string(f[0]), 10, 64)
		w, err2 := strconv.ParseInt(string(f[1]), 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		run, wait, ok = run+r, wait+w, true
	}
	return run, wait, ok
}

// pressure is the "some" line's total (µs) of a PSI file.
func pressure(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(b) {
		f := bytes.Fields(line)
		if len(f) == 0 || string(f[0]) != "some" {
			continue
		}
		for _, kv := range f[1:] {
			if v, ok := bytes.CutPrefix(kv, []byte("total=")); ok {
				n, err := strconv.ParseInt(string(v), 10, 64)
				return n, err == nil
			}
		}
	}
	return 0, false
}

// steal is the stolen ticks and all ticks of /proc/stat's "cpu" line.
func steal(path string) (stolen, total int64, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 9 || string(f[0]) != "cpu" {
		return 0, 0, false
	}
	// user nice system idle iowait irq softirq steal [guest guest_nice]:
	// guest time is already counted in user, so only the first eight add.
	for i := 1; i <= 8; i++ {
		n, err := strconv.ParseInt(string(f[i]), 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += n
		if i == 8 {
			stolen = n
		}
	}
	return stolen, total, true
}
