package cdxj

// SetAfterCutBudget sets how many bytes are still indexed after a forced
// stop, for the tests; the returned func restores it.
func SetAfterCutBudget(n int64) (restore func()) {
	old := afterCutBudget
	afterCutBudget = n
	return func() { afterCutBudget = old }
}
