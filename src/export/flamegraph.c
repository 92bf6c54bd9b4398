/* flamegraph.c: a flame graph as one self-contained HTML file: the trees as JSON
 * in the page, drawn on a canvas by a small script of our own. No network: it
 * opens from disk in any browser. Search (text or regular expression), click to
 * zoom (click the top bar or press Escape to zoom out), hover for name, total
 * and self time, calls and share of the whole. Root at the top. */
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "idmap.h"
#include "dnp_vec.h"

static const char page_head[] =
    "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    "<title>dnprof flame graph</title>\n<style>\n"
    "body{margin:0;font:13px system-ui,-apple-system,'Segoe UI',sans-serif;background:#fafafa;color:#222}\n"
    "header{position:sticky;top:0;z-index:2;background:#fff;border-bottom:1px solid #ddd;padding:8px 12px;"
    "display:flex;gap:12px;align-items:center;flex-wrap:wrap}\n"
    "header h1{font-size:15px;margin:0;font-weight:600;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;max-width:40vw}\n"
    "input[type=search]{width:260px;padding:3px 6px}\n"
    "#info{color:#555}\n#matched{color:#a0a}\n"
    "#wrap{position:relative;padding:4px 12px}\n"
    "canvas{display:block;width:100%;cursor:pointer}\n"
    "#tip{position:fixed;pointer-events:none;background:#fffff0;border:1px solid #999;padding:6px 8px;"
    "box-shadow:0 2px 6px rgba(0,0,0,.2);display:none;max-width:70vw;z-index:3;word-break:break-all}\n"
    "#tip b{display:block;margin-bottom:3px}\n#tip .raw{color:#666;font-size:12px}\n"
    "</style>\n</head>\n<body>\n<header><h1 id=\"title\"></h1>\n"
    "<select id=\"tree\" title=\"thread\"></select>\n"
    "<input id=\"q\" type=\"search\" placeholder=\"search (text or /regex/)\">\n"
    "<button id=\"reset\">reset zoom</button>\n"
    "<span id=\"matched\"></span><span id=\"info\"></span></header>\n"
    "<div id=\"wrap\"><canvas id=\"cv\"></canvas></div>\n<div id=\"tip\"></div>\n"
    "<script type=\"application/json\" id=\"data\">";

static const char page_tail[] =
    "</script>\n<script>\n"
    "(function(){\n"
    "'use strict';\n"
    "var D=JSON.parse(document.getElementById('data').textContent);\n"
    "var H=18,cv=document.getElementById('cv'),cx=cv.getContext('2d'),tip=document.getElementById('tip');\n"
    "var q=document.getElementById('q'),sel=document.getElementById('tree');\n"
    "var T=null,kids=null,depth=null,match=null,z=0,R=[];\n"
    "document.getElementById('title').textContent=D.title;document.title=D.title+' - dnprof';\n"
    "function fmt(ns){if(D.unit==='bytes')return ns<1024?ns+' B':ns<1048576?(ns/1024).toPrecision(3)+' KiB':"
    "ns<1073741824?(ns/1048576).toPrecision(3)+' MiB':(ns/1073741824).toPrecision(4)+' GiB';\n"
    " if(ns<1e3)return ns+' ns';if(ns<1e6)return (ns/1e3).toPrecision(3)+' \\u00b5s';"
    "if(ns<1e9)return (ns/1e6).toPrecision(3)+' ms';return (ns/1e9).toPrecision(4)+' s';}\n"
    "function pct(v){var a=T.t[0];return a?(100*v/a).toFixed(2)+'%':'-';}\n"
    "function num(n){return String(n).replace(/\\B(?=(\\d{3})+(?!\\d))/g,',');}\n"
    "function name(n){return n?D.names[T.f[n]]:'all ('+D.trees[sel.value].label+')';}\n"
    "function load(i){var a=D.trees[i].n,N=a.length/5;\n"
    " T={N:N,p:new Int32Array(N),f:new Int32Array(N),t:new Float64Array(N),s:new Float64Array(N),c:new Float64Array(N)};\n"
    " kids=[];depth=new Int32Array(N);\n"
    " for(var k=0;k<N;k++){T.p[k]=a[5*k];T.f[k]=a[5*k+1];T.t[k]=a[5*k+2];T.s[k]=a[5*k+3];T.c[k]=a[5*k+4];kids.push([]);\n"
    "  if(k>0){kids[T.p[k]].push(k);depth[k]=depth[T.p[k]]+1;}}\n"
    " z=0;search();}\n"
    "function search(){var s=q.value,re=null;match=new Uint8Array(T.N);\n"
    " if(s){var m=/^\\/(.*)\\/([a-z]*)$/.exec(s);try{re=m?new RegExp(m[1],m[2]||'i'):null;}catch(e){re=null;}\n"
    "  var low=s.toLowerCase(),tot=0,inside=new Uint8Array(T.N);\n"
    "  for(var k=1;k<T.N;k++){var nm=D.names[T.f[k]],raw=D.raws[T.f[k]];\n"
    "   var hit=re?(re.test(nm)||re.test(raw)):(nm.toLowerCase().indexOf(low)>=0||raw.toLowerCase().indexOf(low)>=0);\n"
    "   inside[k]=inside[T.p[k]];if(hit){match[k]=1;if(!inside[k])tot+=T.t[k];inside[k]=1;}}\n"
    "  document.getElementById('matched').textContent='matched: '+fmt(tot)+' ('+pct(tot)+')';}\n"
    " else document.getElementById('matched').textContent='';\n"
    " draw();}\n"
    "function color(n){if(match[n])return '#d048d0';var s=name(n),h=0;for(var i=0;i<s.length;i++)h=(h*31+s.charCodeAt(i))|0;\n"
    " h=Math.abs(h);return 'hsl('+(h%50+5)+','+(60+h%30)+'%,'+(55+(h>>5)%15)+'%)';}\n"
    "function draw(){var W=cv.clientWidth,dpr=window.devicePixelRatio||1;R=[];var maxd=0;\n"
    " for(var a=z;a>0;a=T.p[a])R.push([T.p[a],0,W,1]);\n"
    " var sc=W/Math.max(T.t[z],1),st=[[z,0]];\n"
    " while(st.length){var e=st.pop(),n=e[0],x=e[1],w=T.t[n]*sc;if(w<0.4&&n!==z)continue;\n"
    "  R.push([n,x,n===z?W:w,0]);if(depth[n]>maxd)maxd=depth[n];\n"
    "  for(var i=kids[n].length-1,o=x+T.t[n]*sc;i>=0;i--){var k=kids[n][i];o-=T.t[k]*sc;st.push([k,o]);}}\n"
    " var Hh=(maxd+1)*H+2;cv.width=W*dpr;cv.height=Hh*dpr;cv.style.height=Hh+'px';\n"
    " cx.setTransform(dpr,0,0,dpr,0,0);cx.clearRect(0,0,W,Hh);cx.font='12px system-ui,sans-serif';cx.textBaseline='middle';\n"
    " for(var r=0;r<R.length;r++){var n=R[r][0],x=R[r][1],w=R[r][2],y=depth[n]*H;\n"
    "  cx.fillStyle=R[r][3]?'#ccc':(n?color(n):'#e8b04a');cx.fillRect(x,y,Math.max(w-0.5,0.5),H-1);\n"
    "  if(w>28){cx.save();cx.beginPath();cx.rect(x,y,w-2,H);cx.clip();cx.fillStyle='#111';\n"
    "   cx.fillText(name(n),x+3,y+H/2);cx.restore();}}\n"
    " document.getElementById('info').textContent='total '+fmt(T.t[0])+(z?' \\u2014 zoomed on '+name(z)+' (Esc to zoom out)':'');}\n"
    "function at(ev){var b=cv.getBoundingClientRect(),mx=ev.clientX-b.left,my=ev.clientY-b.top;\n"
    " for(var r=R.length-1;r>=0;r--){var n=R[r][0],y=depth[n]*H;if(my>=y&&my<y+H&&mx>=R[r][1]&&mx<R[r][1]+R[r][2])return n;}return -1;}\n"
    "cv.addEventListener('mousemove',function(ev){var n=at(ev);if(n<0){tip.style.display='none';return;}\n"
    " var raw=n?D.raws[T.f[n]]:'';tip.innerHTML='';var b=document.createElement('b');b.textContent=name(n);tip.appendChild(b);\n"
    " if(raw&&raw!==name(n)){var d=document.createElement('div');d.className='raw';d.textContent=raw;tip.appendChild(d);}\n"
    " var l=document.createElement('div');l.textContent='total '+fmt(T.t[n])+' ('+pct(T.t[n])+'), self '+fmt(T.s[n])+' ('+pct(T.s[n])+')'+(n?(D.count?', '+D.count+' ':D.unit==='bytes'?', objects (estimate) ':D.unit?', samples ':', calls ')+num(T.c[n]):'');\n"
    " tip.appendChild(l);tip.style.display='block';\n"
    " var tx=ev.clientX+14,ty=ev.clientY+14;if(tx+tip.offsetWidth>window.innerWidth)tx=Math.max(0,ev.clientX-tip.offsetWidth-14);\n"
    " if(ty+tip.offsetHeight>window.innerHeight)ty=Math.max(0,ev.clientY-tip.offsetHeight-14);tip.style.left=tx+'px';tip.style.top=ty+'px';});\n"
    "cv.addEventListener('mouseleave',function(){tip.style.display='none';});\n"
    "cv.addEventListener('click',function(ev){var n=at(ev);if(n>=0){z=n===z?T.p[n]:n;if(z<0)z=0;draw();}});\n"
    "document.getElementById('reset').addEventListener('click',function(){z=0;draw();});\n"
    "document.addEventListener('keydown',function(ev){if(ev.key==='Escape'&&document.activeElement!==q){z=z?T.p[z]:0;draw();}});\n"
    "q.addEventListener('input',search);\n"
    "sel.addEventListener('change',function(){load(sel.value);});\n"
    "window.addEventListener('resize',draw);\n"
    "for(var i=0;i<D.trees.length;i++){var op=document.createElement('option');op.value=i;op.textContent=D.trees[i].label;sel.appendChild(op);}\n"
    "if(D.trees.length<2)sel.style.display='none';\n"
    "load(0);\n"
    "})();\n"
    "</script>\n</body>\n</html>\n";

typedef struct flame {
    const dnp_calltree *ct;
    FILE *out;
    dnp_idmap names; /* function -> index in the name table */
    uint64_t *funcs, *strs;
    size_t n, cap, scap;
    uint32_t *seq; /* node -> its number in depth-first order */
    uint32_t next;
} flame;

static int name_index(flame *f, uint64_t func, uint64_t name, uint32_t *idx) {
    if (dnp_idmap_get(&f->names, dnp_ct_frame_key(func, name), 0, idx))
        return 0;
    if (DNP_VEC_RESERVE(f->funcs, f->cap, f->n + 1, 256) < 0 || DNP_VEC_RESERVE(f->strs, f->scap, f->n + 1, 256) < 0)
        return -1;
    *idx = (uint32_t)f->n;
    f->funcs[f->n] = func;
    f->strs[f->n++] = name;
    return dnp_idmap_put(&f->names, dnp_ct_frame_key(func, name), 0, *idx);
}

static int node_visit(void *ctx, const dnp_ct_tree *tr, uint32_t n, int enter) {
    flame *f = ctx;
    if (!enter)
        return 0;
    const dnp_ct_node *node = &tr->nodes[n];
    uint32_t idx = 0;
    if (n && name_index(f, node->func, node->name, &idx) != 0)
        return -1;
    f->seq[n] = f->next++;
    fprintf(f->out, "%s%d,%d,%llu,%llu,%llu", n ? "," : "", n ? (int)f->seq[node->parent] : -1, n ? (int)idx : -1,
            (unsigned long long)node->total_ns, (unsigned long long)node->self_ns, (unsigned long long)node->calls);
    return ferror(f->out) ? -1 : 0;
}

static int write_tree(flame *f, const dnp_ct_tree *tr, int comma) {
    dnp_export_thread_object(f->out, comma, "{\"label\":", tr, 1);
    fputs(",\"n\":[", f->out);
    f->seq = calloc(tr->nnodes ? tr->nnodes : 1, sizeof *f->seq);
    f->next = 0;
    int rc = f->seq ? dnp_ct_walk(tr, node_visit, f) : -1;
    free(f->seq);
    fputs("]}", f->out);
    return rc;
}

int dnp_export_flamegraph(const dnp_calltree *ct, FILE *out, const dnp_export_opts *o) {
    flame f;
    memset(&f, 0, sizeof f);
    f.ct = ct;
    f.out = out;
    const char *title = o && o->title ? o->title : ct->t->cmdline;
    fputs(page_head, out);
    fputs("{\"title\":", out);
    dnp_export_json_str(out, title && *title ? title : "dnprof", 1);
    if (ct->unit)
        fprintf(out, ",\"unit\":\"%s\"", ct->unit);
    if (ct->count_type)
        fprintf(out, ",\"count\":\"%s\"", ct->count_type);
    fputs(",\"trees\":[", out);
    int rc;
    if (o && o->tree) {
        rc = write_tree(&f, o->tree, 0);
    } else {
        rc = write_tree(&f, &ct->all, 0);
        for (size_t i = 0; i < ct->nthreads && ct->nthreads > 1 && rc == 0; i++)
            rc = write_tree(&f, &ct->threads[i], 1);
    }
    if (rc == 0) {
        fputs("],\n\"names\":[", out);
        for (size_t i = 0; i < f.n; i++) {
            char buf[2048];
            fputs(i ? ",\n" : "\n", out);
            dnp_export_json_str(out, dnp_export_name(ct, f.funcs[i], f.strs[i], buf, sizeof buf), 1);
        }
        fputs("],\n\"raws\":[", out);
        for (size_t i = 0; i < f.n; i++) {
            char buf[64];
            fputs(i ? ",\n" : "\n", out);
            dnp_export_json_str(out, dnp_ct_raw_name(ct, f.funcs[i], f.strs[i], buf, sizeof buf), 1);
        }
        fputs("]}", out);
        fputs(page_tail, out);
    }
    dnp_idmap_release(&f.names);
    free(f.funcs);
    free(f.strs);
    return dnp_export_end(out, rc);
}
