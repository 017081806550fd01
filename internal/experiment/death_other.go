//go:build !linux

package experiment

// Adopt does nothing off Linux: there is no subreaper to become.
func Adopt() {}

func killAdopted() {}
