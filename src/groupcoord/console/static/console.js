/* The console's live updates: server-sent events from /events put the pieces the broker
   rendered (and escaped) in place by element id, keeping each table's filter and sort.
   Markup only ever comes from the broker; values from clients are text inside it. */
(function(){
  var body=document.body;var page=body.getAttribute('data-page');
  if(page!=='overview'&&page!=='group')return;
  var ui=window.groupcoordUI;
  var live=document.getElementById('live');var status=document.getElementById('status');
  var updates=0;
  function parse(html){var t=document.createElement('template');t.innerHTML=html;return t.content.firstElementChild}
  function mark(){updates+=1;body.setAttribute('data-updates',String(updates))}
  /* a table's filter text and sorted column, to carry over to its replacement */
  function tableState(el){var out={};if(!el)return out;
    el.querySelectorAll('table.data[id]').forEach(function(t){
      var box=t.previousElementSibling;var heads=t.tHead.rows[0].cells;var sorted=null;
      for(var i=0;i<heads.length;i++){if(heads[i].classList.contains('sorted-asc'))sorted=[i,'sorted-asc'];
        if(heads[i].classList.contains('sorted-desc'))sorted=[i,'sorted-desc']}
      out[t.id]={q:box&&box.classList.contains('filter')?box.value:'',sorted:sorted}});
    return out}
  function restore(el,state){
    el.querySelectorAll('table.data[id]').forEach(function(t){var s=state[t.id];if(!s)return;
      var box=t.previousElementSibling;if(box&&box.classList.contains('filter'))box.value=s.q;
      if(s.sorted){t.tHead.rows[0].cells[s.sorted[0]].classList.add(s.sorted[1]);ui.resort(t)}
      ui.refilter(t)})}
  function replace(id,html){var old=document.getElementById(id);if(!old)return;
    var state=tableState(old);var fresh=parse(html);old.replaceWith(fresh);ui.init(fresh);restore(fresh,state)}
  var resortTimer=null;
  function applyRows(d){
    var table=document.getElementById('groups-table');if(!table)return;var tbody=table.tBodies[0];var added=[];
    d.rows.forEach(function(r){var row=parse('<table><tbody>'+r.html+'</tbody></table>').tBodies[0].rows[0];
      var old=document.getElementById(r.id);if(old)old.replaceWith(row);else tbody.appendChild(row);
      ui.localize(row);added.push(row)});
    d.removed.forEach(function(id){var old=document.getElementById(id);if(old)old.remove()});
    ui.refilter(table,added);
    var none=document.getElementById('no-groups');if(none&&tbody.rows.length)none.remove();
    if(!resortTimer)resortTimer=setTimeout(function(){resortTimer=null;ui.resort(table)},300)}
  var url=page==='group'?'/events?group='+encodeURIComponent(body.getAttribute('data-group')):
    '/events?since='+encodeURIComponent(body.getAttribute('data-since')||'');
  var source=new EventSource(url);
  source.onopen=function(){live.classList.add('on');status.textContent='live'};
  source.onerror=function(){live.classList.remove('on');status.textContent='reconnecting…'};
  source.addEventListener('rows',function(e){applyRows(JSON.parse(e.data));mark()});
  source.addEventListener('sections',function(e){
    JSON.parse(e.data).sections.forEach(function(s){replace(s[0],s[1])});mark()});
})();
