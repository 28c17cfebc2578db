package bench

// Text returns n bytes of the origin's text-like body (?text=1): prose from
// a small vocabulary, about 4:1 under gzip. The writer's benchmarks use it
// so that their compression figures are on the same bytes as the sweep's.
func Text(n int) []byte { return makeText(n) }
