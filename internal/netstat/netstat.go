// Package netstat reads this machine's kernel counts of packets lost at
// its input queue and TCP segments sent again: on loopback (a local
// server, the simulator) each is a stall of 200 ms or more inside the
// TTFT or gap of the request it carried, so a stage measured while they
// grew measured the kernel's queue, not the server.
//
//	before, _ := netstat.Read()
//	… the stage …
//	after, _ := netstat.Read()
//	lost := after.Since(before)
package netstat

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Counters is this machine's count of the packets its kernel lost or sent
// again, since it started.
type Counters struct {
	// Dropped is the packets dropped at the input queue of every CPU
	// (/proc/net/softnet_stat, its second column: the queue held
	// net.core.netdev_max_backlog packets and was full).
	Dropped uint64
	// Retrans is the TCP segments sent again (/proc/net/snmp, Tcp
	// RetransSegs), for every connection of the machine.
	Retrans uint64
}

// Read reads the counters; false where they cannot be read (not Linux,
// or /proc unreadable).
func Read() (Counters, bool) {
	var k Counters
	f, err := os.Open("/proc/net/softnet_stat")
	if err != nil {
		return k, false
	}
	defer f.Close()
	if k.Dropped, err = parseSoftnet(io.LimitReader(f, 1<<20)); err != nil {
		return k, false
	}
	g, err := os.Open("/proc/net/snmp")
	if err != nil {
		return k, false
	}
	defer g.Close()
	if k.Retrans, err = parseSNMP(io.LimitReader(g, 1<<20), "Tcp", "RetransSegs"); err != nil {
		return k, false
	}
	return k, true
}

// Since is the counts from an earlier reading to k (zero where a counter
// went back: the kernel's counters wrap at 32 bits per CPU).
func (k Counters) Since(before Counters) Counters {
	sub := func(a, b uint64) uint64 {
		if a < b {
			return 0
		}
		return a - b
	}
	return Counters{Dropped: sub(k.Dropped, before.Dropped), Retrans: sub(k.Retrans, before.Retrans)}
}

// parseSoftnet sums the dropped column (the second, hexadecimal) of
// /proc/net/softnet_stat, one line per CPU.
func parseSoftnet(r io.Reader) (uint64, error) {
	sc := bufio.NewScanner(r)
	var sum uint64
	n := 0
	for sc.Scan() {
		n++
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			return 0, fmt.Errorf("softnet_stat line %d: %d fields, want 2 or more", n, len(fields))
		}
		v, err := strconv.ParseUint(fields[1], 16, 64)
		if err != nil {
			return 0, fmt.Errorf("softnet_stat line %d: dropped %q: %v", n, fields[1], err)
		}
		sum += v
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, fmt.Errorf("softnet_stat: no CPU lines")
	}
	return sum, nil
}

// parseSNMP finds one counter of /proc/net/snmp (or netstat): pairs of
// lines "Proto: name name …" then "Proto: value value …".
func parseSNMP(r io.Reader, proto, name string) (uint64, error) {
	sc := bufio.NewScanner(r)
	var names []string
	for sc.Scan() {
		p, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || p != proto {
			continue
		}
		fields := strings.Fields(rest)
		if names == nil {
			names = fields
			continue
		}
		for i, f := range names {
			if f == name && i < len(fields) {
				v, err := strconv.ParseUint(fields[i], 10, 64)
				if err != nil {
					return 0, fmt.Errorf("snmp %s %s: %q: %v", proto, name, fields[i], err)
				}
				return v, nil
			}
		}
		return 0, fmt.Errorf("snmp %s: no %s", proto, name)
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("snmp: no %s lines", proto)
}
