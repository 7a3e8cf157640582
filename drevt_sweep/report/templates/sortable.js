// Click a header of a table.sortable to sort its rows by that column (again: the other way).
// Cells with a data-v number sort numerically, others as text; empty values go last.
(function () {
  function key(cell) {
    var v = cell.getAttribute("data-v");
    if (v === null) return {text: cell.textContent.trim()};
    return v === "" ? {missing: true} : {number: parseFloat(v)};
  }
  function compare(a, b) {
    if (a.missing || b.missing) return (a.missing ? 1 : 0) - (b.missing ? 1 : 0);
    if (a.number !== undefined && b.number !== undefined) return a.number - b.number;
    return String(a.text).localeCompare(String(b.text), undefined, {numeric: true});
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    var head = table.tHead.rows[0], body = table.tBodies[0];
    Array.prototype.forEach.call(head.cells, function (th, column) {
      th.className += " sort";
      th.title = "sort by this column";
      th.addEventListener("click", function () {
        var up = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(head.cells, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", up ? "ascending" : "descending");
        var rows = Array.prototype.map.call(body.rows, function (row, i) {
          return {row: row, key: key(row.cells[column]), i: i};
        });
        rows.sort(function (x, y) {
          var order = compare(x.key, y.key);
          if (order === 0) return x.i - y.i;
          if (x.key.missing || y.key.missing) return order;  // empty last either way
          return up ? order : -order;
        });
        var fragment = document.createDocumentFragment();
        rows.forEach(function (r) { fragment.appendChild(r.row); });
        body.appendChild(fragment);
      });
    });
  });
})();
