package twin

// Inverse is inverse, for the tests.
var Inverse = inverse
