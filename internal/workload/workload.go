package workload

import (
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/tokperf/tokperf/internal/record"
)

// Synthetic makes prompts of InputTokens words and asks for OutputTokens.
// One word is about one token on most tokenizers, and exactly one on the
// embedded simulator.
type Synthetic struct {
	InputTokens  int
	OutputTokens int
	IgnoreEOS    bool
	Temperature  float64
	Seed         int64
	// SharedPrefix is how many leading tokens every prompt shares (to study
	// a prefix cache on purpose); the rest of each prompt is its own.
	SharedPrefix int
	// PrefixGroups, above 1, makes that many different shared prefixes,
	// request i starting with prefix i mod PrefixGroups.
	PrefixGroups int
}

var words = strings.Fields(`the of and to in is was for on that with as by at from his her an it
be are this which or had not but were they have one all their has been would there more when who
will no if out so said what up its about into than them can only other new some could time these
two may then do first any my now such like our over man me even most made after also did many
before must through back years where much your way well down should because each just those
people how too little state good very make world still own see men work long get here between
both life being under never day same another know while last might us great old year off come
since against go came right used take three states himself few house use during without again
place american around however home small found thought went say part once general high upon
school every don does got united left number course war until always away something fact though
water less public put think almost hand enough far took head yet government system better set
told nothing night end why called didn eyes find going look asked later knew point next program
city business give group toward young days let room president side social given present several
order national possible rather second face per among form important often things looked early
white case john become large big need four within felt along children saw best church ever least
power development light thought family interest want members others mind country area done
turned although open god service certain kind problem began different door thus help sense
means whole matter perhaps itself york times law human line above name example action company
hands local show whether five history gave today either act feet across taken past quite anything
having seen death experience body word half really week field car words already themselves`)

// Request builds the i-th request of a run.
func (s *Synthetic) Request(i int) record.Request {
	var b strings.Builder
	n := max(s.InputTokens, 1)
	group := uint64(0)
	if s.PrefixGroups > 1 {
		group = uint64(i % s.PrefixGroups)
	}
	shared := rand.New(rand.NewPCG(uint64(s.Seed), 0x5a5ed+group))
	for k := range min(s.SharedPrefix, n-1) {
		if k > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[shared.IntN(len(words))])
	}
	// A distinct word after the shared part keeps the rest from being cached.
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	b.WriteString("r")
	b.WriteString(strconv.Itoa(i))
	r := rand.New(rand.NewPCG(uint64(s.Seed), uint64(i)))
	for range n - 1 - min(s.SharedPrefix, n-1) {
		b.WriteByte(' ')
		b.WriteString(words[r.IntN(len(words))])
	}
	return record.Request{
		Prompt: b.String(), PromptTokens: n, MaxTokens: s.OutputTokens,
		IgnoreEOS: s.IgnoreEOS, Temperature: s.Temperature,
	}
}
