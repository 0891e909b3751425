package report

import (
	"strings"
)

// css themes the page and the SVG charts through variables, light by default and dark
// under prefers-color-scheme: dark.
const css = `
:root{--bg:#fff;--fg:#1d2430;--muted:#5b6573;--grid:#e3e7ec;--panel:#f6f8fa;--prio:#d9480f;--batch:#9aa5b1;--default:#c9d1d9;--warn:#fff4e5;--warnb:#f0a050;--ok:#2b8a3e;--bad:#c92a2a;--probe:#7a5cd6;--best:#2b8a3e}
@media (prefers-color-scheme: dark){:root{--bg:#0f1318;--fg:#e6e9ee;--muted:#9aa4b2;--grid:#262d36;--panel:#171c23;--prio:#ff8c42;--batch:#566170;--default:#3a4350;--warn:#2b2113;--warnb:#b9772e;--ok:#69db7c;--bad:#ff6b6b;--probe:#a78bfa;--best:#69db7c}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1100px;padding:16px 20px 60px;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
h1{font-size:22px;margin:8px 0 12px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid var(--grid);padding-bottom:4px}
nav{font-size:13px;margin:6px 0 10px}nav a{margin-right:12px;color:var(--fg)}
table{border-collapse:collapse;margin:8px 0;font-size:13px;font-variant-numeric:tabular-nums}
th,td{border:1px solid var(--grid);padding:3px 7px;text-align:left}th{background:var(--panel)}
tr.prio td:first-child{border-left:3px solid var(--prio)}tr.unfinished td{color:var(--bad)}
.delta{color:var(--muted);font-size:12px}.note{color:var(--muted);font-size:13px}
.warn{background:var(--warn);border:1px solid var(--warnb);padding:8px 12px;border-radius:6px;margin:10px 0}
.ok{color:var(--ok)}.bad{color:var(--bad)}
figure.chart{margin:10px 0 18px;background:var(--panel);border-radius:6px;padding:6px 6px 2px}
figure.chart svg{width:100%;height:auto;display:block}
figcaption{font-size:12px;color:var(--muted);padding:2px 6px 6px}
.key{display:inline-block;margin:0 8px 0 0;white-space:nowrap}.key::before{content:"";display:inline-block;width:14px;height:3px;margin:0 4px 3px 0;background:var(--c)}
.key.mean::before{height:5px}
.key.dot::before,.key.ring::before{width:9px;height:9px;border-radius:50%;margin-bottom:0;vertical-align:-1px}
.key.ring::before{background:none;border:2px solid var(--c);width:6px;height:6px}
svg text{fill:var(--muted);font-size:11px}svg .ylabel,svg .xlabel{font-size:12px}
.grid{stroke:var(--grid);stroke-width:1}.frame,.tick{stroke:var(--muted);stroke-width:1}
.series{fill:none;stroke-width:1.2;stroke-linejoin:round}
.series.batch{stroke:var(--batch);stroke-width:.8;opacity:.55}
.series.prio{stroke:var(--prio);stroke-width:1;opacity:.45}
.series[style].batch,.series[style].prio{opacity:.95}
.series.prio[style]{stroke-width:2.4;stroke-dasharray:none}.series.batch[style]{stroke-width:1;stroke-dasharray:4 2}
.series.mean{stroke-width:2.6;opacity:1}.series.mean.prio{stroke:var(--prio)}.series.mean.batch{stroke:var(--fg);opacity:.9}
.series.cdf{stroke-width:2.2}
.series.hl,.event.hl{stroke-width:3.2!important;opacity:1!important}
.probeband{fill:var(--probe);opacity:.10}
.cbm{stroke:var(--bg);stroke-width:.6}
.probe{fill:var(--probe);opacity:.8}.probe.best{fill:var(--best)}.probe.failed{fill:var(--bad)}
.event{stroke-width:1.6}
.point{stroke:var(--bg);stroke-width:1}.ring .point{stroke:var(--c);stroke-width:2.5;fill:none}
.swatch{display:inline-block;width:11px;height:11px;border-radius:2px;background:var(--c);margin-right:6px;vertical-align:-1px}
.key.block::before{height:10px;width:12px;vertical-align:-1px}.key.none::before{background:none;border-top:2px dotted var(--c);height:0}
.series.overlay{stroke-width:2.2;opacity:.95}.series.overlay.prio-mean{stroke-dasharray:6 3;stroke-width:1.8}
svg .plabel{font-size:11px;fill:var(--fg)}svg .wlabel{font-size:10.5px;fill:#fff;pointer-events:none}
.ways{stroke:var(--bg);stroke-width:.5}
details{margin:8px 0}summary{cursor:pointer;color:var(--muted)}
code{font-size:12px}
`

// script highlights one job across the charts of its section on hover (no network, no
// library).
const script = `
(function(){
  var last=[];
  document.addEventListener('mouseover',function(e){
    var t=e.target.closest?e.target.closest('[data-job]'):null;
    last.forEach(function(x){x.classList.remove('hl')});last=[];
    if(!t)return;
    var sec=t.closest('section');if(!sec)return;
    last=Array.prototype.slice.call(sec.querySelectorAll('[data-job="'+t.getAttribute('data-job')+'"]'));
    last.forEach(function(x){x.classList.add('hl')});
  });
})();
`

func (p *page) html() string {
	var sb strings.Builder
	sb.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
	sb.WriteString(`<meta name="viewport" content="width=device-width,initial-scale=1">`)
	sb.WriteString(`<meta name="color-scheme" content="light dark">`)
	sb.WriteString(`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">`)
	sb.WriteString("<title>" + esc(p.title) + "</title><style>" + css + "</style></head><body>")
	sb.WriteString("<nav>" + strings.Join(p.toc, " ") + "</nav>")
	// The header (h1 and run table) was written first into body; nav goes above it.
	sb.WriteString(p.body.String())
	sb.WriteString("<script>" + script + "</script></body></html>\n")
	return sb.String()
}
