package workload_test

import (
	"fmt"
	"strings"

	"github.com/tokperf/tokperf/internal/workload"
)

func ExampleParseLengths() {
	for _, spec := range []string{"512", "512:lognormal:0.6", "uniform:100:2000", "512:lognormal"} {
		l, err := workload.ParseLengths(spec)
		if err != nil {
			fmt.Println("--input-tokens", err)
			continue
		}
		fmt.Println(l, l.At(1, 0), l.At(1, 1))
	}
	// Output:
	// 512 512 512
	// 512:lognormal:0.6 646 812
	// 100-2000 301 1561
	// --input-tokens "512:lognormal": want N, N:lognormal:SIGMA, N:normal:SD, MIN-MAX or @FILE
}

func ExampleNew() {
	in, _ := workload.ParseLengths("64")
	w, err := workload.New(workload.Options{Input: in, Output: workload.Fixed(128), SharedPrefix: 8, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()
	w.Prepare(0, 2) // before the stage starts
	req := w.Request(1)
	fmt.Println(w.Describe())
	fmt.Println(req.PromptTokens, req.PromptSource, req.MaxTokens)
	fmt.Println(strings.Join(strings.Fields(req.Prompt)[:12], " "), "…")
	// Output:
	// synthetic text (3174 words, Zipf), input 64 tokens, output 128 tokens, shared prefix 8 tokens, lengths estimated (no tokenizer), seed 1
	// 64 estimate 128
	// As like the, tax and 49. r1 Of risen not the and …
}

func ExampleNew_dataset() {
	w, err := workload.New(workload.Options{Dataset: "testdata/sharegpt.json", Requests: 3, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(w.Describe())
	req := w.Request(0)
	fmt.Printf("%q: %d tokens (%s), output %d\n", req.Prompt, req.PromptTokens, req.PromptSource, req.MaxTokens)
	// Output:
	// dataset testdata/sharegpt.json (sharegpt): 3 requests sampled of 4 usable, 3 skipped: 3 no human turn followed by a reply, output as the dataset says, lengths estimated (no tokenizer), seed 1
	// "Write a haiku about autumn leaves falling in the park.": 11 tokens (estimate), output 20
}
