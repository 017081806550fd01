package workload

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Filter bounds the lengths of a dataset's requests, in tokens (counted by
// the tokenizer when there is one, else estimated); 0 means no bound. The
// output bounds apply to records that give an output length.
type Filter struct {
	MinPromptTokens, MaxPromptTokens int
	MinOutputTokens, MaxOutputTokens int
}

// LoadOptions says how to read and sample a dataset.
type LoadOptions struct {
	Format    Format    // "" detects it
	Tokenizer Tokenizer // nil: lengths are estimated (EstimateTokens)
	// Sample is how many requests to keep, drawn at random (reservoir
	// sampling, so memory holds Sample items whatever the file's size);
	// 0 keeps every usable one.
	Sample int
	Seed   int64
	Filter Filter
	// MaxRecord caps one record in bytes; 0 means MaxRecordBytes.
	MaxRecord int
	// Conversations keeps ShareGPT records' whole conversations
	// (Item.Turns), for multi-turn replay.
	Conversations bool
}

// Dataset is the sample of a dataset's requests a run draws from.
type Dataset struct {
	Name   string
	Format Format
	// Items are the sampled requests in a seeded random order, with
	// PromptTokens set and Reply dropped.
	Items []Item
	// Usable is how many records passed the filter (Items holds at most
	// Sample of them).
	Usable int
	// Skipped counts the records left out, by reason.
	Skipped map[string]int
}

// LoadDataset reads a dataset from r (name is used in messages), keeps the
// records that pass o.Filter, and samples o.Sample of them. A file with
// none usable is an error saying why they were skipped.
//
// Counting tokens is the slow part with a real tokenizer, so records are
// counted in batches on every CPU, and with no filter to apply only the
// sampled ones are counted.
func LoadDataset(r io.Reader, name string, o LoadOptions) (*Dataset, error) {
	count := EstimateTokens
	if o.Tokenizer != nil {
		count = o.Tokenizer.Count
	}
	rd := NewReader(r, name, o.Format)
	rd.MaxRecord, rd.Conversations = o.MaxRecord, o.Conversations
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0xda7a5e7))
	d := &Dataset{Name: name}
	f := o.Filter
	// Reservoir sampling (Algorithm R): every usable record has the same
	// chance to be kept.
	keep := func(it *Item) {
		switch {
		case o.Sample <= 0 || d.Usable < o.Sample:
			d.Items = append(d.Items, *it)
		default:
			if k := rng.IntN(d.Usable + 1); k < o.Sample {
				d.Items[k] = *it
			}
		}
		d.Usable++
	}
	late := f == (Filter{}) && o.Sample > 0 // count only the sample
	var batch []*Item
	flush := func() {
		countItems(batch, count)
		for _, it := range batch {
			if reason := f.reject(it); reason != "" {
				rd.skipped[reason]++
				continue
			}
			keep(it)
		}
		batch = batch[:0]
	}
	for rd.Next() {
		it := rd.Item()
		switch {
		case strings.TrimSpace(it.Prompt) == "":
			rd.skipped[skipEmptyPrompt]++
		case late:
			keep(it)
		default:
			if batch = append(batch, it); len(batch) == 512 {
				flush()
			}
		}
	}
	flush()
	d.Format, d.Skipped = rd.Format(), rd.Skipped()
	if err := rd.Err(); err != nil {
		return nil, err
	}
	if late {
		ptrs := make([]*Item, len(d.Items))
		for k := range d.Items {
			ptrs[k] = &d.Items[k]
		}
		countItems(ptrs, count)
	}
	if len(d.Items) == 0 {
		return nil, fmt.Errorf("no usable requests in %s (%s)", name, skippedText(d.Skipped))
	}
	rng.Shuffle(len(d.Items), func(a, b int) { d.Items[a], d.Items[b] = d.Items[b], d.Items[a] })
	return d, nil
}

// countItems sets the prompt's tokens of every item and, for a ShareGPT
// reply, the output's, dropping the reply; on every CPU.
func countItems(items []*Item, count func(string) int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(items)) {
		wg.Go(func() {
			for {
				k := int(next.Add(1) - 1)
				if k >= len(items) {
					return
				}
				it := items[k]
				it.PromptTokens = count(it.Prompt)
				if it.Reply != "" {
					it.OutputTokens = max(count(it.Reply), 1)
					it.Reply = ""
				}
			}
		})
	}
	wg.Wait()
}

// reject says why f leaves it out, or "".
func (f Filter) reject(it *Item) string {
	p, out := it.PromptTokens, it.OutputTokens
	switch {
	case f.MinPromptTokens > 0 && p < f.MinPromptTokens:
		return fmt.Sprintf(skipPromptShort, f.MinPromptTokens)
	case f.MaxPromptTokens > 0 && p > f.MaxPromptTokens:
		return fmt.Sprintf(skipPromptLong, f.MaxPromptTokens)
	case f.MinOutputTokens > 0 && out > 0 && out < f.MinOutputTokens:
		return fmt.Sprintf(skipOutputShort, f.MinOutputTokens)
	case f.MaxOutputTokens > 0 && out > f.MaxOutputTokens:
		return fmt.Sprintf(skipOutputLong, f.MaxOutputTokens)
	}
	return ""
}

// skippedText says how many records were skipped and why, commonest first:
// "12 skipped: 10 no human turn followed by a reply, 2 prompt over 100 tokens".
func skippedText(skipped map[string]int) string {
	total := 0
	for _, n := range skipped {
		total += n
	}
	if total == 0 {
		return "0 skipped"
	}
	keys := slices.SortedFunc(maps.Keys(skipped), func(a, b string) int {
		return cmp.Or(cmp.Compare(skipped[b], skipped[a]), strings.Compare(a, b))
	})
	var b strings.Builder
	b.WriteString(strconv.Itoa(total))
	b.WriteString(" skipped: ")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(skipped[k]))
		b.WriteByte(' ')
		b.WriteString(k)
	}
	return b.String()
}
