package upload

// Event announces one file the store has confirmed, as --upload-webhook
// receives it. Its field names follow browsertrix-crawler's (hash, size,
// filename, completed) where they say the same thing.
type Event struct {
	// ID is the SHA-256 of the key and the file's hash: a receiver drops
	// the repeats that at-least-once delivery brings.
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	Filename string `json:"filename"`
	Key      string `json:"key"`
	URL      string `json:"url"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
	Hash     string `json:"hash"` // the SHA-256 again, under browsertrix-crawler's name
	// Records, FirstDate and LastDate describe a WARC's records (their
	// count and first and last WARC-Date); zero for other kinds.
	Records    int64  `json:"records,omitempty"`
	FirstDate  string `json:"first_date,omitempty"`
	LastDate   string `json:"last_date,omitempty"`
	WARCPrefix string `json:"warc_prefix,omitempty"`
	// Completed is false only for a file recovered after a crash.
	Completed bool `json:"completed"`
}
