// evolve serve: live lists (fetch a partial again, htmx-style) and a run's live timeline
// (server-sent events). No framework, no build step; served from the package.
(function () {
  'use strict';
  var main = document.querySelector('main');
  var every = parseInt((main && main.getAttribute('data-refresh')) || '2000', 10);

  function editing(box) {
    // The inbox is not replaced under a person typing a note or an answer.
    var active = document.activeElement;
    if (active && box.contains(active) && /INPUT|TEXTAREA/.test(active.tagName)) { return true; }
    return Array.prototype.some.call(box.querySelectorAll('input[name=note], textarea'), function (el) {
      return el.value !== '';
    });
  }

  Array.prototype.forEach.call(document.querySelectorAll('[data-live]'), function (box) {
    var url = box.getAttribute('data-live');
    var keep = box.getAttribute('data-keep-edits') === '1';
    function tick() {
      fetch(url, { credentials: 'same-origin', cache: 'no-store' }).then(function (r) {
        if (!r.ok) { throw new Error(url + ': ' + r.status); }
        return r.text();
      }).then(function (html) {
        if (html !== box.innerHTML && !(keep && editing(box))) { box.innerHTML = html; }
        box.setAttribute('data-updated', String(Date.now()));
      }).catch(function () { /* the next tick tries again */ }).then(function () {
        setTimeout(tick, every);
      });
    }
    setTimeout(tick, every);
  });

  var events = document.getElementById('events');
  if (events && window.EventSource) {
    var count = 0;
    var state = document.getElementById('live-state');
    var counter = document.getElementById('live-count');
    var status = document.getElementById('run-status');
    var url = events.getAttribute('data-stream') + '?after=' + (events.getAttribute('data-after') || '0');
    var source = new EventSource(url);
    function cell(row, text, cls) {
      var td = document.createElement('td');
      if (cls) { td.className = cls; }
      td.textContent = text == null ? '' : String(text);
      row.appendChild(td);
    }
    source.onopen = function () { if (state) { state.textContent = 'live'; } };
    source.onerror = function () { if (state) { state.textContent = 'reconnecting…'; } };
    source.addEventListener('events', function (e) {
      var batch = JSON.parse(e.data);
      var box = events.parentNode.parentNode;
      var atEnd = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
      var frag = document.createDocumentFragment();
      batch.forEach(function (ev) {
        var row = document.createElement('tr');
        row.setAttribute('data-seq', ev.seq);
        cell(row, ev.seq, 'num');
        cell(row, typeof ev.time === 'number' ? ev.time.toFixed(3) : '', 'num');
        var code = document.createElement('code');
        code.textContent = ev.event;
        var td = document.createElement('td');
        td.appendChild(code);
        row.appendChild(td);
        cell(row, ev.task);
        cell(row, ev.detail, 'meta');
        frag.appendChild(row);
      });
      events.appendChild(frag);
      count += batch.length;
      events.setAttribute('data-count', String(count));
      if (counter) { counter.textContent = String(count); }
      if (atEnd) { box.scrollTop = box.scrollHeight; }
    });
    source.addEventListener('status', function (e) {
      var now = JSON.parse(e.data).status;
      if (!status) { return; }
      var was = status.getAttribute('data-status');
      status.textContent = now;
      status.className = 'status st-' + now;
      status.setAttribute('data-status', now);
      if (was && was !== now && was === 'running') {
        // The run stopped or ended: fetch the page's drawings again (no reload).
        fetch(location.pathname, { credentials: 'same-origin', cache: 'no-store' }).then(function (r) {
          return r.text();
        }).then(function (html) {
          var doc = new DOMParser().parseFromString(html, 'text/html');
          ['plan', 'gantt', 'revisions', 'people', 'calls', 'models', 'tasks', 'waiting'].forEach(function (id) {
            var fresh = doc.getElementById(id);
            var old = document.getElementById(id);
            if (fresh && old) { old.replaceWith(fresh); }
          });
          var head = doc.querySelector('main > header');
          var mine = document.querySelector('main > header');
          if (head && mine) { mine.replaceWith(head); }
        });
      }
    });
  }
})();
