package netstat

import (
	"strings"
	"testing"
)

// Two CPUs of a machine that dropped packets at its input queue (captured
// here after 10,000 connections probed together on loopback), and its TCP
// counters.
const (
	softnetCapture = "0024b58d 00016e70 00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n" +
		"00256d9e 00011042 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000001 00000000 00000000\n"
	snmpCapture = "Ip: Forwarding DefaultTTL InReceives\nIp: 1 64 6232144\n" +
		"Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n" +
		"Tcp: 1 200 120000 -1 41631 41398 221 20827 20166 6231716 6435782 1715 88 20977 0\n" +
		"Udp: InDatagrams NoPorts\nUdp: 0 0\n"
)

func TestCounters(t *testing.T) {
	t.Parallel()
	dropped, err := parseSoftnet(strings.NewReader(softnetCapture))
	if want := uint64(0x16e70 + 0x11042); err != nil || dropped != want {
		t.Errorf("dropped %d (%v), want %d", dropped, err, want)
	}
	retrans, err := parseSNMP(strings.NewReader(snmpCapture), "Tcp", "RetransSegs")
	if err != nil || retrans != 1715 {
		t.Errorf("RetransSegs %d (%v), want 1715", retrans, err)
	}
	for name, in := range map[string]string{"empty": "", "one field": "0024b58d\n", "not hex": "0024b58d zz\n"} {
		if _, err := parseSoftnet(strings.NewReader(in)); err == nil {
			t.Errorf("softnet %s: no error", name)
		}
	}
	for name, in := range map[string]string{"no Tcp": "Udp: a\nUdp: 1\n", "no counter": "Tcp: A B\nTcp: 1 2\n", "not a number": "Tcp: RetransSegs\nTcp: x\n"} {
		if _, err := parseSNMP(strings.NewReader(in), "Tcp", "RetransSegs"); err == nil {
			t.Errorf("snmp %s: no error", name)
		}
	}
	if d := (Counters{Dropped: 5, Retrans: 9}).Since(Counters{Dropped: 7, Retrans: 4}); d.Dropped != 0 || d.Retrans != 5 {
		t.Errorf("since: %+v, want a counter that went back as 0", d)
	}
	if k, ok := Read(); ok && k.Retrans == 0 && k.Dropped == 0 {
		t.Logf("this machine's kernel counters are zero")
	}
}

func FuzzCounters(f *testing.F) {
	f.Add(softnetCapture)
	f.Add(snmpCapture)
	f.Fuzz(func(t *testing.T, s string) {
		parseSoftnet(strings.NewReader(s))
		parseSNMP(strings.NewReader(s), "Tcp", "RetransSegs")
	})
}
