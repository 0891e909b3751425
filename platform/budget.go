package platform

import (
	"colo/resctrl/plan"
	"colo/sched"
)

// Budgets turns the planner's per-socket budgets (plan.Budgets) into the known
// sched.CLOSBudget the scheduler sees in every Observation: both platforms report them
// through CLOSBudgeter.
func Budgets(bs []plan.Budget) []sched.CLOSBudget {
	out := make([]sched.CLOSBudget, len(bs))
	for i, b := range bs {
		out[i] = sched.GroupBudget(b.Groups, b.Foreign)
	}
	return out
}
