package record

import "time"

// Host is what the client's machine did over one stage or one soak slice
// that neither the client nor the embedded simulator controls: how long
// tokperf's own threads waited for a CPU, how much of the machine's time a
// hypervisor stole, the CPU pressure on the machine, and the TCP segments
// tokperf's own connections sent again. A field that could not be read is
// absent; Known says which were read (docs/METRICS.md, "The host").
type Host struct {
	Stage int           `json:"stage"`
	From  time.Duration `json:"from_ns"`
	To    time.Duration `json:"to_ns"`
	// CPURunS and CPUWaitS are the seconds tokperf's threads ran on a CPU
	// and waited in a run queue for one (/proc/self/schedstat), summed
	// over its threads.
	CPURunS  float64 `json:"cpu_run_s,omitempty"`
	CPUWaitS float64 `json:"cpu_wait_s,omitempty"`
	// PressureS is how long some runnable task on the machine waited for
	// a CPU (/proc/pressure/cpu "some"), in seconds of the window.
	PressureS float64 `json:"cpu_pressure_s,omitempty"`
	// Steal is the share of the machine's CPU time taken by a hypervisor
	// for other guests (/proc/stat), 0..1.
	Steal float64 `json:"steal,omitempty"`
	// Retrans are the TCP segments tokperf's own connections to the
	// server sent again, from TCP_INFO of each connection as its request
	// ended (the lean client; net/http's connections are not read).
	Retrans int64 `json:"tcp_retransmits,omitempty"`
	// Known lists what was read: "schedstat", "pressure", "stat",
	// "tcp_info"; a reading missing from it is unknown, not zero.
	Known []string `json:"known,omitempty"`
}

// Len is the reading's window.
func (h *Host) Len() time.Duration { return h.To - h.From }

// WaitShare is the share of the time tokperf's threads wanted a CPU that
// they spent waiting for one: 0 on an idle machine; 0.5 when every thread
// waited as long as it ran. NaN-free: 0 when nothing ran.
func (h *Host) WaitShare() float64 {
	if t := h.CPURunS + h.CPUWaitS; t > 0 {
		return h.CPUWaitS / t
	}
	return 0
}

// PressureShare is the share of the window in which some task on the
// machine waited for a CPU.
func (h *Host) PressureShare() float64 {
	if d := h.Len().Seconds(); d > 0 {
		return min(1, h.PressureS/d)
	}
	return 0
}

// Has says whether the reading named was taken.
func (h *Host) Has(what string) bool {
	for _, k := range h.Known {
		if k == what {
			return true
		}
	}
	return false
}
