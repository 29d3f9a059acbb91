/* groupcoord's page behaviour, shared by the pipeline's report (inlined) and the live console
   (served as /static/ui.js): times shown in the reader's time zone, tables that sort (click a
   header) and filter (type in the box before the table). It reads and moves what the server
   rendered; it never builds markup from data, so a name from a client stays text. */
(function(){
  var pad=function(n){return String(n).padStart(2,'0')};
  function fmtLocal(ms){var d=new Date(ms);
    var zone='';try{zone=new Intl.DateTimeFormat(undefined,{timeZoneName:'short'}).formatToParts(d)
      .filter(function(x){return x.type==='timeZoneName'})[0].value}catch(e){zone=''}
    return d.getFullYear()+'-'+pad(d.getMonth()+1)+'-'+pad(d.getDate())+' '+pad(d.getHours())+':'+
      pad(d.getMinutes())+':'+pad(d.getSeconds())+(zone?' '+zone:'')}
  /* every <time data-ms> and chart tick under root, in local time (the UTC text kept as title) */
  function localize(root){
    root.querySelectorAll('time[data-ms]').forEach(function(t){
      if(t.hasAttribute('title'))return;
      t.title=t.textContent;t.textContent=fmtLocal(Number(t.getAttribute('data-ms')))});
    root.querySelectorAll('text[data-ms]').forEach(function(t){
      var d=new Date(Number(t.getAttribute('data-ms')));t.textContent=pad(d.getHours())+':'+pad(d.getMinutes())});
  }
  function filterBox(table){var box=table.previousElementSibling;
    return box&&box.classList.contains('filter')?box:null}
  /* show a row when its text holds what the table's filter box holds */
  function showRow(row,q){row.style.display=!q||row.textContent.toLowerCase().indexOf(q)>=0?'':'none'}
  function query(table){var box=filterBox(table);return box?box.value.toLowerCase():''}
  function refilter(table,rows){var q=query(table);
    Array.prototype.forEach.call(rows||table.tBodies[0].rows,function(r){showRow(r,q)})}
  function compare(i,asc){return function(a,b){
    var x=a.cells[i].getAttribute('data-v'),y=b.cells[i].getAttribute('data-v');
    var nx=parseFloat(x),ny=parseFloat(y);var c;
    if(x!==null&&y!==null&&x!==''&&y!==''&&!isNaN(nx)&&!isNaN(ny)){c=nx-ny}
    else{c=a.cells[i].textContent.localeCompare(b.cells[i].textContent)}
    return asc?c:-c}}
  /* sort again by the header last clicked (after rows were replaced or added) */
  function resort(table){var heads=table.tHead.rows[0].cells;
    for(var i=0;i<heads.length;i++){var h=heads[i];
      if(h.classList.contains('sorted-asc')||h.classList.contains('sorted-desc')){
        var body=table.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
        rows.sort(compare(i,h.classList.contains('sorted-asc')));
        rows.forEach(function(r){body.appendChild(r)});return}}}
  function initTable(table){
    if(table.getAttribute('data-ui'))return;table.setAttribute('data-ui','1');
    var body=table.tBodies[0];var heads=table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads,function(th,i){th.addEventListener('click',function(){
      var asc=!th.classList.contains('sorted-asc');
      Array.prototype.forEach.call(heads,function(h){h.classList.remove('sorted-asc','sorted-desc')});
      th.classList.add(asc?'sorted-asc':'sorted-desc');
      var rows=Array.prototype.slice.call(body.rows);rows.sort(compare(i,asc));
      rows.forEach(function(r){body.appendChild(r)})})});
    var box=filterBox(table);
    if(box){box.addEventListener('input',function(){refilter(table)})}
  }
  function init(root){localize(root);root.querySelectorAll('table.data').forEach(initTable)}
  window.groupcoordUI={localize:localize,initTable:initTable,refilter:refilter,resort:resort,init:init};
  init(document);
  var zoneNote=document.getElementById('zone');
  if(zoneNote){try{zoneNote.textContent='Times are in your local time zone ('+
    Intl.DateTimeFormat().resolvedOptions().timeZone+'); hover a time for UTC.'}catch(e){}}
})();
