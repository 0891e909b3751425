package report

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"colo/store/storetest"
)

var seriesGroupRe = regexp.MustCompile(`<figure class="chart" id="fig-\d+" data-chart="series-([a-z]+)">.*?<g data-points="(\d+)" data-jobs="(\d+)" data-lines="(\d+)">(.*?)</g></svg><figcaption>(.*?)</figcaption>`)
var jobPathRe = regexp.MustCompile(`<path class="series (prio|batch)" data-job="(\d+)"`)

// A run with many jobs draws at most maxJobLines individual lines per chart, the same jobs
// in every chart: the priority jobs that spent least time over their target, then the
// batch jobs with the lowest mean IPCE; the caption says so and the means still cover
// every job (the point count is that of all jobs).
func TestSeriesCapKeepsMostInterestingJobs(t *testing.T) {
	dir, _ := generate(t, "many", storetest.Options{Seed: 11, Jobs: 120, Tick: time.Second, Priority: 0.4, Schedulers: []string{"dynamic"}})
	runs, _, _, err := loadDir(dir, false)
	if err != nil || len(runs) != 1 {
		t.Fatalf("%d runs, %v", len(runs), err)
	}
	r := runs[0]
	nPrio, nBatch := 0, 0
	for id := range r.series {
		if r.job[id].Priority {
			nPrio++
		} else {
			nBatch++
		}
	}
	if nPrio <= maxPrioLines || nBatch <= maxJobLines-maxPrioLines || len(r.overTgt) <= maxPrioLines {
		t.Fatalf("fixture: %d priority (%d with a time over target) and %d batch jobs with samples; the cap must bind on both", nPrio, len(r.overTgt), nBatch)
	}
	html, _ := render(t, dir)
	charts := seriesGroupRe.FindAllStringSubmatch(html, -1)
	if len(charts) != nMetrics {
		t.Fatalf("%d series charts, want %d", len(charts), nMetrics)
	}
	var first string
	for _, c := range charts {
		metric, body, caption := c[1], c[5], c[6]
		jobs, _ := strconv.Atoi(c[3])
		lines, _ := strconv.Atoi(c[4])
		if jobs != nPrio+nBatch || lines != maxJobLines {
			t.Errorf("%s: data-jobs %d data-lines %d, want %d and %d", metric, jobs, lines, nPrio+nBatch, maxJobLines)
		}
		// The means are over every job: the chart's point count equals all jobs' buckets.
		points, _ := strconv.Atoi(c[2])
		all := 0
		m := map[string]int{"ipc": mIPC, "ipce": mIPCE, "stalled": mStalled, "occupancy": mOcc, "bandwidth": mBW}[metric]
		for _, js := range r.series {
			for _, n := range js.cnt[m] {
				if n > 0 {
					all++
				}
			}
		}
		if points != all {
			t.Errorf("%s: %d points, the buckets of all jobs are %d", metric, points, all)
		}
		if !strings.Contains(caption, "Lines drawn for 40 of") || !strings.Contains(caption, "means are over all") {
			t.Errorf("%s: caption does not say which lines are drawn: %s", metric, caption)
		}
		var drawn []string
		for _, p := range jobPathRe.FindAllStringSubmatch(body, -1) {
			drawn = append(drawn, p[1]+p[2])
		}
		if len(drawn) != maxJobLines {
			t.Errorf("%s: %d job paths", metric, len(drawn))
		}
		if first == "" {
			first = strings.Join(drawn, ",")
		} else if strings.Join(drawn, ",") != first {
			t.Errorf("%s draws other jobs than the first chart", metric)
		}
	}
	// The choice: no left-out priority job spent less time over target than a drawn one,
	// and no left-out batch job had a lower mean IPCE than a drawn one.
	ids, _ := r.drawnJobs()
	drawn := map[int]bool{}
	for _, id := range ids {
		drawn[id] = true
	}
	worstPrio, bestBatch := math.Inf(-1), math.Inf(-1)
	for id := range drawn {
		if r.job[id].Priority {
			worstPrio = math.Max(worstPrio, r.overTgt[id])
		} else {
			bestBatch = math.Max(bestBatch, r.meanIPCE[id])
		}
	}
	for id := range r.series {
		if drawn[id] {
			continue
		}
		if v, ok := r.overTgt[id]; ok && r.job[id].Priority && v < worstPrio {
			t.Errorf("priority job %d left out with time over target %v < drawn %v", id, v, worstPrio)
		}
		if !r.job[id].Priority && r.meanIPCE[id] < bestBatch {
			t.Errorf("batch job %d left out with mean IPCE %v < drawn %v", id, r.meanIPCE[id], bestBatch)
		}
	}
}
