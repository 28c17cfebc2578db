module github.com/warcproxy/warcproxy

go 1.26.8

require (
	github.com/google/go-cmp v0.7.0
	github.com/google/uuid v1.6.0
	github.com/klauspost/compress v1.20.4
	github.com/nlnwa/gowarc/v3 v3.1.0
	github.com/oklog/run v1.2.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
	golang.org/x/sync v0.25.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/bits-and-blooms/bitset v1.24.0 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/nlnwa/whatwg-url v0.6.2 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.44.0 // indirect
	golang.org/x/text v0.29.0 // indirect
)
