package record

import "strconv"

// Plural is n and the noun, singular for one: "1 request", "3 requests".
// Every package that counts things in words says them with it.
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// WereWas is the verb after Plural(n, …): " was" for one, " were" else.
func WereWas(n int) string {
	if n == 1 {
		return " was"
	}
	return " were"
}
