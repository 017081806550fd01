package bench

import (
	"time"

	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/host"
	"github.com/tokperf/tokperf/internal/record"
)

// hostMeter reads what the machine did to the run between two moments: CPU
// wait, pressure and steal, and the retransmits of the client's own
// connections (docs/METRICS.md, "The host").
type hostMeter struct {
	b       *backend.Backend
	snap    host.Snapshot
	retrans int64
	at      time.Duration
}

// meterHost starts a meter at offset at; nil on a network of the
// caller's own (in memory, in virtual time), where the machine's load
// must not reach the figures, nor so the verdicts.
func meterHost(env *Env, b *backend.Backend, at time.Duration) *hostMeter {
	if env != nil && env.Listen != nil {
		return nil
	}
	m := &hostMeter{b: b, at: at, snap: host.Read()}
	m.retrans, _ = b.Retransmits()
	return m
}

// take is the reading since the last take (or the start) up to offset to,
// for stage; the next take starts at to. False from a nil meter.
func (m *hostMeter) take(stage int, to time.Duration) (record.Host, bool) {
	if m == nil {
		return record.Host{}, false
	}
	now := host.Read()
	h := host.Between(m.snap, now)
	h.Stage, h.From, h.To = stage, m.at, to
	if n, ok := m.b.Retransmits(); ok {
		h.Retrans = n - m.retrans
		h.Known = append(h.Known, "tcp_info")
		m.retrans = n
	}
	m.snap, m.at = now, to
	return h, true
}
