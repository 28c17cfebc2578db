package e2e

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: hostile
// clients, broken origins, slowloris connections and stopped proxies must
// not leave any behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
