"""The report's way down into ``coeval view``: a section whose links appear when a viewer
is running on this machine and serving the report's run.

The report is a static file that makes no request at all: a page may not read the
viewer's answers (the viewer allows no other origin, ``file://`` pages included), so the
links go to the viewer's ``/open?run=PATH&to=PAGE`` by navigation, which opens that page
of the report's run, or says which runs the viewer serves. They appear when the reader
presses the section's button: the ranking, judges, agreement, missing-data and
data-quality sections then each get a link to the matching viewer page.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from markupsafe import Markup

from coeval_analysis.reports.blocks import Section, Text

if TYPE_CHECKING:
    from coeval_analysis.reports.page import PageContext

__all__ = ["SECTION_LINKS", "VIEWER_URL", "viewer_section"]

#: where ``coeval view`` serves by default; ``$COEVAL_VIEW_URL`` (at analysis time) overrides it
VIEWER_URL = "http://127.0.0.1:8765"

_SCRIPT = """
<script>document.getElementById('viewer-find').addEventListener('click',function(){
var base=%(base)s,run=%(run)s,box=document.getElementById('viewer-links');
function at(page){return base+'/open?run='+encodeURIComponent(run)+'&to='+encodeURIComponent(page);}
box.innerHTML='In the viewer at '+base+' (start it first with the command above): '+
'<a id="viewer-start">ranking and datapoints</a> &middot; <a id="viewer-disputed">most disputed datapoints</a>'+
' &middot; <a id="viewer-failures">failed and unparseable calls</a>';
document.getElementById('viewer-start').href=at('/');
document.getElementById('viewer-disputed').href=at('/?sort=disagreement');
document.getElementById('viewer-failures').href=at('/failures');
var jumps=%(jumps)s;Object.keys(jumps).forEach(function(id){var sec=document.getElementById(id);
if(!sec||sec.querySelector('.viewer-jump'))return;var p=document.createElement('p'),a=document.createElement('a');
p.className='viewer-jump';a.href=at(jumps[id][0]);a.textContent=jumps[id][1];p.appendChild(a);
var h=sec.querySelector('h2');if(h){h.after(p);}else{sec.prepend(p);}});});
</script>"""

#: report section id -> (viewer page under the run, link text): added once a viewer answers
SECTION_LINKS = {
    "ranking": ("/", "See every datapoint behind this ranking in the viewer"),
    "judges": ("/?sort=disagreement", "See the datapoints the judges disagree on most in the viewer"),
    "agreement": ("/?sort=disagreement", "See the datapoints the judges disagree on most in the viewer"),
    "missing": ("/failures", "See the failed and unparseable calls in the viewer"),
    "quality": ("/failures", "See the failed and unparseable calls in the viewer"),
}


def viewer_section(p: PageContext) -> Section | None:
    """Links into the viewer for the run this report was made from."""
    if not p.summary.get("run"):
        return None
    run = str(Path(str(p.summary["run"])).resolve())  # the viewer answers with resolved paths too
    hint = (f"<p>Every datapoint, answer, judgment and raw reply of this run: <code>coeval view --run "
            f'{html.escape(run)}</code>, then <button id="viewer-find" type="button">open it here</button></p>'
            '<p id="viewer-links"></p>')
    script = _SCRIPT % {"base": json.dumps(os.environ.get("COEVAL_VIEW_URL") or VIEWER_URL),
                        "run": json.dumps(run).replace("</", "<\\/"), "jumps": json.dumps(SECTION_LINKS)}
    return Section("viewer", "Look inside the run", "", [Text(Markup(hint + script))])
