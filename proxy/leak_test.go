package proxy_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: a front
// end stopped after serving (on a fake capture sink) must not leave any
// behind. The whole proxy is checked the same way in internal/e2e.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
