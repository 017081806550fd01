package tokenizer_test

import (
	"fmt"

	"github.com/tokperf/tokperf/internal/tokenizer"
)

func ExampleLoad() {
	tok, err := tokenizer.Load("o200k_base")
	if err != nil {
		fmt.Println(err)
		return
	}
	ids := tok.Encode("Hello, world!")
	fmt.Println(tok.Name(), tok.Count("Hello, world!"), ids, tok.Decode(ids))
	// Output: o200k_base 4 [13225 11 2375 0] Hello, world!
}
