import { render } from 'preact';
import { App } from './App';
import './styles.css';
import './phone.css';
import './inbox.css';

render(<App />, document.getElementById('app')!);
