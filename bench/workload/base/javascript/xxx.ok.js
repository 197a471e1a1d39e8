const lines = require('fs').readFileSync(0, 'utf8').split('\n');
const n = parseInt(lines[0], 10);
const name = lines[1].trim();

let removed = 0;
let run = 0;
// every 'x' beyond the second in a row must be removed
for (let i = 0; i < n; i++) {
  if (name[i] === 'x') {
    run++;
    if (run >= 3) removed++;
  } else {
    run = 0;
  }
}
console.log(removed);
