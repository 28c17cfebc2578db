// Package deps pins dependencies while the packages that use them are being
// written. Removed once they are all imported for real.
package deps

import (
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/google/uuid"
	_ "github.com/klauspost/compress/gzip"
	_ "github.com/nlnwa/gowarc/v3"
	_ "github.com/oklog/run"
	_ "github.com/stretchr/testify/require"
	_ "go.uber.org/goleak"
	_ "golang.org/x/sync/singleflight"
	_ "gopkg.in/yaml.v3"
)
