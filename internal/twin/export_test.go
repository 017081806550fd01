package twin

// Inverse is inverse, for the tests.
var Inverse = inverse

// PowerThrough and ExtendBy, for the tests.
var (
	PowerThrough = powerThrough
	ExtendBy     = extendBy
)
