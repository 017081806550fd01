package cli

import "strconv"

// plural is n and the noun, singular for one: "1 request", "3 requests".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
